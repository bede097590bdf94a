"""The NUMA sysfs tree of the GB200 host in tests/fixtures/nvidia_smi_topo, for the tests of NUMA binding and IRQ
placement (this machine has no Grace CPU to read it from).

Import from tests as `from grace_sysfs import GB200_TOPO, write_grace_nodes`. The nodes and their CPUs come from the
real capture: each GPU's CPU Affinity is the CPU list of the first node of its NUMA Affinity (the Grace socket),
its GPU NUMA ID is its memory's node and the rest of the list its MIG memory partitions, which have no CPUs.
"""

from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nvidia_smi_topo import parse_nvidia_smi_topo

GB200_TOPO = "nvidia_smi_topo/gb200-4gpu-8nic-numa-lists.txt"
# Distances in the kernel's form (10 = local). No GB200 distance table was found published: the values are made up
# to rank a socket's own CPU node nearest to the memory nodes of its GPUs, which is what the hardware does.
LOCAL, SOCKETS, OWN_SOCKET, OTHER_SOCKET = 10, 40, 80, 120


def grace_nodes():
    """{node: (cpulist text, serving CPU node)} of the GB200 capture; CPU nodes serve themselves."""
    nodes = {}
    for gpu in parse_nvidia_smi_topo(read_fixture(GB200_TOPO))["gpus"]:
        socket = gpu["numa_affinity"]
        nodes[socket] = (gpu["cpu_affinity"], socket)
        for node in [gpu["gpu_numa_id"]] + gpu["numa_affinity_nodes"][1:]:
            nodes[node] = ("", socket)
    return nodes


def write_grace_nodes(sys_root):
    """Write devices/system/node/{online, node<N>/cpulist, node<N>/distance} under sys_root; return grace_nodes()."""
    nodes = grace_nodes()
    base = sys_root / "devices" / "system" / "node"
    base.mkdir(parents=True, exist_ok=True)
    online = sorted(nodes)
    assert online == list(range(len(online)))
    (base / "online").write_text("0-%d\n" % online[-1])
    for node, (cpus, socket) in nodes.items():
        (base / ("node%d" % node)).mkdir()
        (base / ("node%d" % node) / "cpulist").write_text(cpus + "\n")
        row = []
        for other in online:
            other_cpus, other_socket = nodes[other]
            if other == node:
                row.append(LOCAL)
            elif cpus and other_cpus:
                row.append(SOCKETS)
            else:
                row.append(OWN_SOCKET if other_socket == socket else OTHER_SOCKET)
        (base / ("node%d" % node) / "distance").write_text(" ".join(str(d) for d in row) + "\n")
    return nodes
