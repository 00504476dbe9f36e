"""How a sweep-level asset hands its typed value to the next one (Dagster's I/O managers): the value is written into
the lab's store as the JSON of its model and read back through that model, so a downstream asset receives the
record (`diagnosis_inputs: DiagnosisInputs`), not the lab, and the file is there to read when a number looks wrong.

- `RecordIOManager` ("records"): one `<asset>.json` in the store's comparisons/ folder (label_corrections.json,
  diagnosis_inputs.json). A file edited by hand or written by an older version fails on read, naming the file and
  the field (core.records.invalid_fields).
- `DiagnosisIOManager` ("diagnosis_files"): the written diagnosis, diagnosis.md, diagnosis.json and the page
  diagnosis.html (diagnosis.diagnosis_page.write_diagnosis); their paths and the page's URL go into the materialization.
"""

from __future__ import annotations

import json

from dagster import ConfigurableIOManager, InputContext, MetadataValue, OutputContext
from pydantic import BaseModel, ValidationError

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
from rag_ttc_assets.adapters.report_server import report_url
from rag_ttc_assets.diagnosis.diagnosis_records import DiagnosisFileError, Diagnosis, read_diagnosis
from rag_ttc_assets.core.records import invalid_fields
from rag_ttc_assets.defs.resources import LabResource
from rag_ttc_assets.diagnosis.diagnosis_page import write_diagnosis


class RecordFileError(ValueError):
    """A stored asset value that is not its record: names the file and the field."""


class RecordIOManager(ConfigurableIOManager):
    """An unpartitioned asset's record as `<asset>.json` in the store's comparisons/ folder."""

    lab: LabResource

    def _path(self, context: OutputContext | InputContext):
        return self.lab.lab().store.comparisons_dir / f"{context.asset_key.path[-1]}.json"

    def handle_output(self, context: OutputContext, obj: BaseModel) -> None:
        path = self._path(context)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(obj.model_dump(mode="json"), indent=1, ensure_ascii=False)
                           .encode("utf-8"), mode=0o644)
        context.add_output_metadata({"record": MetadataValue.path(str(path))})

    def load_input(self, context: InputContext) -> BaseModel:
        model = context.dagster_type.typing_type
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"{context.name}: RecordIOManager hands in pydantic records, not {model!r}")
        path = self._path(context.upstream_output or context)
        if not path.exists():
            raise RecordFileError(f"{path}: not written: materialize {context.asset_key.path[-1]}")
        try:
            return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except ValidationError as e:
            raise RecordFileError(f"{path}: not a {model.__name__}: {invalid_fields(e)}") from None


class DiagnosisIOManager(ConfigurableIOManager):
    """The written diagnosis as diagnosis.md, diagnosis.json and diagnosis.html in the store's comparisons/."""

    lab: LabResource

    def handle_output(self, context: OutputContext, obj: Diagnosis) -> None:
        out = write_diagnosis(obj, self.lab.lab().store.comparisons_dir)
        context.add_output_metadata({
            "diagnosis_md": MetadataValue.path(str(out.md)), "diagnosis_json": MetadataValue.path(str(out.json)),
            "page": MetadataValue.path(str(out.html)),
            # One click from the UI: the page over HTTP when `rag-ttc serve-reports` runs (make dev starts it).
            **({"page_url": MetadataValue.url(url)} if (url := report_url("comparisons", out.html.name)) else {})})

    def load_input(self, context: InputContext) -> Diagnosis:
        path = self.lab.lab().store.comparisons_dir / "diagnosis.json"
        try:
            return read_diagnosis(path.read_text(encoding="utf-8"), str(path))
        except DiagnosisFileError as e:
            raise RecordFileError(str(e)) from None
