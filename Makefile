# Compile Studio: two commands on a fresh machine.
#
#   make run      set up .venv (once) and start the app
#   make test     set up .venv (once) and run the whole test suite (offscreen Qt)
#   make cli ARGS='show latest'   set up .venv (once) and run compile-studio-cli ARGS
#                 (the commands live in .venv/bin, not on PATH: or `source .venv/bin/activate`)
#
# Setup installs torch first: the CPU build where no NVIDIA GPU is present
# (no nvidia-smi), the default (CUDA) build where one is. Override with
#   make TORCH_SPEC='torch==2.13.0' TORCH_INDEX=https://download.pytorch.org/whl/cpu test
# PYTHON picks the interpreter that creates .venv (3.10 or newer).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0
HAVE_NVIDIA := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)
ifeq ($(HAVE_NVIDIA),yes)
TORCH_SPEC ?= torch>=2.4,<3
else
TORCH_SPEC ?= torch==$(TORCH_VERSION)
endif
TORCH_INDEX ?=
PIP_INDEX_ARGS := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),)
STAMP := $(VENV)/.compile-studio-setup

.PHONY: setup run cli test test-stress lint package self-test icons install-desktop clean screenshots

setup: $(STAMP)

# Re-runs only when the venv is missing or pyproject.toml changed.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c 'import sys; assert sys.version_info >= (3, 10), "Python 3.10+ needed"'
	@if $(BIN)/python -c 'import torch' 2>/dev/null; then \
		echo "torch already installed: $$($(BIN)/python -c 'import torch; print(torch.__version__)')"; \
	else \
		echo "installing $(TORCH_SPEC) (NVIDIA GPU: $(if $(HAVE_NVIDIA),yes,no))"; \
		$(BIN)/python -m pip install $(PIP_INDEX_ARGS) '$(TORCH_SPEC)'; \
	fi
	$(BIN)/python -m pip install -e '.[test]'
	@touch $(STAMP)

run: setup
	@if [ "$$(uname)" = Linux ] && [ -z "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ] && [ -z "$${QT_QPA_PLATFORM:-}" ]; then \
		echo "No display (DISPLAY/WAYLAND_DISPLAY unset): run 'xvfb-run -a make run', or 'make self-test' for a check without a window." >&2; \
		exit 2; \
	fi
	$(BIN)/compile-studio

# compile-studio-cli without activating .venv: make cli ARGS='run --layers 512,512,10'
ARGS ?= --help
cli: setup
	$(BIN)/compile-studio-cli $(ARGS)

test: setup
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

# the same suite beside one nice -n 19 busy loop per core (no bound or timeout loosened)
test-stress: setup
	packaging/dev/test-stress.sh $(BIN)/python

# ruff (style, imports), lint-imports (the layer contracts in pyproject.toml), mypy (types):
# all three run, and lint fails if any of them does.
LINT_PATHS := app tests bench docs examples packaging/render_icons.py packaging/compile_studio_launcher.py
lint: setup
	@status=0; \
	echo "== ruff"; $(BIN)/ruff check $(LINT_PATHS) || status=1; \
	echo "== lint-imports"; PYTHONPATH=app $(BIN)/lint-imports --no-logo || status=1; \
	echo "== mypy"; $(BIN)/mypy || status=1; \
	exit $$status

# the pictures of the README and docs/, made anew from the current code with the app's own
# exports (docs/make_screenshots.py; offscreen without a display, or: xvfb-run -a make screenshots)
screenshots: setup
	$(BIN)/python docs/make_screenshots.py --out docs

self-test: setup
	$(BIN)/python -m compile_studio --self-test

# Re-render the PNG icons from resources/icons/compile-studio.svg.
icons: setup
	QT_QPA_PLATFORM=offscreen $(BIN)/python packaging/render_icons.py

# One-folder bundle in dist/compile-studio/ (about 0.9 GB with CPU torch).
package: setup
	@$(BIN)/python -c 'import PyInstaller' 2>/dev/null || $(BIN)/python -m pip install -e '.[package]'
	$(BIN)/pyinstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller \
		packaging/compile-studio.spec
	@du -sh dist/compile-studio

# Desktop entry, AppStream metadata and icons for the current user (PREFIX=~/.local).
PREFIX ?= $(HOME)/.local
APP_ID := io.github.compilestudio.CompileStudio
install-desktop:
	install -Dm644 packaging/$(APP_ID).desktop $(PREFIX)/share/applications/$(APP_ID).desktop
	install -Dm644 packaging/$(APP_ID).metainfo.xml $(PREFIX)/share/metainfo/$(APP_ID).metainfo.xml
	install -Dm644 resources/icons/compile-studio.svg \
		$(PREFIX)/share/icons/hicolor/scalable/apps/$(APP_ID).svg
	for s in 16 32 48 64 128 256; do \
		install -Dm644 resources/icons/compile-studio-$$s.png \
			$(PREFIX)/share/icons/hicolor/$${s}x$${s}/apps/$(APP_ID).png; \
	done

clean:
	rm -rf build dist .pytest_cache .ruff_cache app/*.egg-info
	find app tests resources -name __pycache__ -type d -prune -exec rm -rf {} +
