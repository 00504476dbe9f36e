"""The base of the bench's report records (bench/growth.py, bench/scale.py, bench/ann_realistic.py): frozen, no
undeclared field, and `to_json()` giving the JSON `--json` prints: fields in declaration order by their JSON names,
the fields a record lists in `OMIT_WHEN_NONE` left out when they were not measured (at any depth)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    OMIT_WHEN_NONE: ClassVar[tuple[str, ...]] = ()  # optional figures: absent from the JSON, never null

    @model_serializer(mode="wrap")
    def _omit_unmeasured(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        for key in self.OMIT_WHEN_NONE:
            if out.get(key, 0) is None:
                del out[key]
        return out

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)
