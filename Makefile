# Entry points. Each target sets up what it needs (scripts/setup.sh is idempotent and fast when nothing changed).
NODES ?= 4
VMS ?= 2
SCENARIO ?= bonding
# DISTRO=debian13 (or debian12, bookworm, trixie) runs every lab node on that release; DISTROS names one per node
# for a mixed lab, e.g. DISTROS="debian12 debian12 debian13 debian13" with NODES=4 (scripts/lab.sh).
DISTRO ?=
DISTROS ?=
LAB_ENV = $(if $(DISTRO),GPUFABRIC_LAB_RELEASE='$(DISTRO)') $(if $(DISTROS),GPUFABRIC_LAB_RELEASES='$(DISTROS)')
SHELL := /bin/bash

.PHONY: run test setup lab-up lab-down vmlab-up vmlab-down image lint sanity units molecule bench docs clean

run: ## Set up, start the lab and its monitoring node, run site, scheduler, monitoring and verify, print where the reports and alerts are
	$(LAB_ENV) scripts/run-lab.sh $(NODES)

test: ## Every test: ansible-lint (production), ansible-test sanity, unit tests, every Molecule scenario, AWX checks
	scripts/test.sh

setup:
	scripts/setup.sh

lab-up: setup
	$(LAB_ENV) scripts/lab.sh up $(NODES)

lab-down:
	scripts/lab.sh down

vmlab-up: setup ## QEMU VMs with Debian's kernel (bonding, 802.1Q, kernel ESP, Soft-RoCE); VMS=2 by default
	scripts/vmlab.sh up $(VMS)

vmlab-down:
	scripts/vmlab.sh down

image: setup
	$(LAB_ENV) scripts/lab.sh image

lint: setup
	source scripts/env.sh && ansible-lint --profile production

sanity: setup
	scripts/sanity.sh

units: setup
	source scripts/env.sh && pytest tests/unit

molecule: setup image
	source scripts/env.sh && molecule test -s $(SCENARIO)

bench: setup
	scripts/bench.sh

docs: setup ## Regenerate the role READMEs' variable tables, then build the docs site into docs/site/build/html
	source scripts/env.sh && python scripts/docs.py && python scripts/docs.py site docs/site

clean: lab-down
	rm -rf .build .cache reports
