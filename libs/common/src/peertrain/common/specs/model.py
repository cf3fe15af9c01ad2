"""Model and feature specs: plain JSON, validated with bounded sizes.

A job names its model as JSON (``{"arch": "mlp", "hidden": [128]}``); peers build it
from this built-in zoo and never run code a job sends them. Every size is bounded, and
:func:`check_budget` bounds the parameter count *before* anything is allocated, so a
hostile spec cannot make a peer or the aggregator allocate absurd amounts of memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from .errors import SpecInvalid
from .graph import GraphSpec
from .named import NamedArchSpec

__all__ = [
    "MAX_ACTIVATIONS_PER_SAMPLE",
    "MAX_PARAMETERS",
    "AnyModelSpec",
    "CNNSpec",
    "DataShape",
    "GraphSpec",
    "LogRegSpec",
    "MLPSpec",
    "ModelSpec",
    "NamedArchSpec",
    "parse_data_shape",
    "parse_model_spec",
    "spec_errors",
]

MAX_PARAMETERS = 50_000_000
"""Most parameters a zoo model may have (200 MB as float32)."""

MAX_ACTIVATIONS_PER_SAMPLE = 1 << 22
"""Most values one convolution layer (or one node of a layer graph) may produce for one
sample."""

_Spec = ConfigDict(frozen=True, extra="forbid")


class LogRegSpec(BaseModel):
    """Multinomial logistic regression: one linear layer on the flattened input."""

    model_config = _Spec

    arch: Literal["logreg"]


class MLPSpec(BaseModel):
    """Multi-layer perceptron on the flattened input.

    Attributes
    ----------
    hidden
        Width of each hidden layer (at most 8 layers of at most 16,384 units).
    dropout
        Dropout probability after each hidden activation.
    activation
        ``relu``, ``tanh`` or ``gelu``.
    """

    model_config = _Spec

    arch: Literal["mlp"]
    hidden: tuple[Annotated[int, Field(ge=1, le=16_384)], ...] = Field(
        default=(128,), min_length=1, max_length=8
    )
    dropout: float = Field(default=0.0, ge=0.0, le=0.9)
    activation: Literal["relu", "tanh", "gelu"] = "relu"


class CNNSpec(BaseModel):
    """A small CNN for images: ``conv(k) -> ReLU -> maxpool(2)`` blocks, then a classifier.

    Attributes
    ----------
    channels
        Output channels of each convolution block (1 to 4 blocks, at most 256 each).
    kernel_size
        Odd kernel size; padding keeps height and width (pooling halves them while both
        are at least 2).
    hidden
        Width of the hidden fully connected layer, ``0`` for none.
    dropout
        Dropout probability before each fully connected layer.
    """

    model_config = _Spec

    arch: Literal["cnn"]
    channels: tuple[Annotated[int, Field(ge=1, le=256)], ...] = Field(
        default=(32, 64), min_length=1, max_length=4
    )
    kernel_size: Literal[1, 3, 5, 7] = 3
    hidden: int = Field(default=128, ge=0, le=4096)
    dropout: float = Field(default=0.0, ge=0.0, le=0.9)


_ARCHS = ("logreg", "mlp", "cnn", "graph", "torchvision")


def _untagged(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate, reporting problems where the spec has them: ``hidden.0``, not
    ``mlp.hidden.0`` (pydantic puts the union's tag in the location), and a missing or
    unknown ``arch`` at ``arch``."""
    try:
        return handler(value)
    except ValidationError as exc:
        items: list[Any] = []
        for item in exc.errors(include_url=False):
            loc = item["loc"]
            if loc and loc[0] in _ARCHS:
                loc = loc[1:]
            if not loc and item["type"] in ("union_tag_invalid", "union_tag_not_found"):
                loc = ("arch",)
            items.append({**item, "loc": loc})
        try:
            error = ValidationError.from_exception_data(exc.title, items)
        except (KeyError, TypeError, ValueError):  # an error type pydantic cannot rebuild
            raise exc from None
        raise error from None


AnyModelSpec = LogRegSpec | MLPSpec | CNNSpec | GraphSpec | NamedArchSpec
"""The parsed form of a :data:`ModelSpec`."""

ModelSpec = Annotated[AnyModelSpec, Field(discriminator="arch"), WrapValidator(_untagged)]
"""Any zoo model's spec (or a layer graph, :mod:`.graph`), told apart by ``arch``
(wherever it is a field, its problems are reported at the field's own locations, e.g.
``model.hidden.0``)."""

_MODEL_SPEC: TypeAdapter[AnyModelSpec] = TypeAdapter(ModelSpec)


class DataShape(BaseModel):
    """The shape of the data a model is built for: one sample's shape and the number of
    classes (all that sizes a model; the dataset's whole description is
    :class:`peertrain.common.events.datasets.FeatureSpec`, whose ``data_shape`` this is).

    Exactly one of ``input_size`` (tables: a flat vector) and ``image_shape``
    (``[channels, height, width]``) is set. A dataset feature spec's fields
    (``input_shape``, ``classes``, ...) are accepted too and reduced to these fields.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    input_size: int | None = Field(default=None, ge=1, le=1_000_000)
    image_shape: (
        tuple[
            Annotated[int, Field(ge=1, le=16)],
            Annotated[int, Field(ge=1, le=1024)],
            Annotated[int, Field(ge=1, le=1024)],
        ]
        | None
    ) = None
    num_classes: int = Field(ge=2, le=10_000)

    @model_validator(mode="before")
    @classmethod
    def _from_dataset_spec(cls, value: Any) -> Any:
        if not isinstance(value, Mapping) or "input_shape" not in value:
            return value
        data = dict(value)
        shape = list(data.pop("input_shape"))
        if "num_classes" not in data and "classes" in data:
            data["num_classes"] = len(data["classes"])
        if len(shape) == 3:
            data["image_shape"] = shape
            data.pop("input_size", None)
        else:
            size = 1
            for dim in shape:
                size *= int(dim)
            data.setdefault("input_size", size)
        return data

    @model_validator(mode="after")
    def _one_shape(self) -> DataShape:
        if (self.input_size is None) == (self.image_shape is None):
            raise ValueError("give exactly one of input_size and image_shape")
        if self.image_shape is not None:
            c, h, w = self.image_shape
            if c * h * w > 1_000_000:
                raise ValueError(f"image_shape {list(self.image_shape)} exceeds 1,000,000 values")
        return self

    @property
    def flat_size(self) -> int:
        """Values in one sample (the width of a flattening model's first layer)."""
        if self.image_shape is not None:
            c, h, w = self.image_shape
            return c * h * w
        assert self.input_size is not None
        return self.input_size


def spec_errors(error: ValidationError) -> list[dict[str, str]]:
    """Pydantic's errors as ``{"loc", "msg"}`` items (no input values echoed back)."""
    return [
        {"loc": ".".join(str(p) for p in item["loc"]), "msg": item["msg"]}
        for item in error.errors(include_url=False, include_input=False)
    ]


def parse_model_spec(value: Any) -> AnyModelSpec:
    """Validate a model spec given as a mapping (or an already parsed spec).

    Raises
    ------
    SpecInvalid
        With one ``{"loc", "msg"}`` item per problem in ``detail``.
    """
    if isinstance(value, LogRegSpec | MLPSpec | CNNSpec | GraphSpec | NamedArchSpec):
        return value
    try:
        return _MODEL_SPEC.validate_python(value)
    except ValidationError as exc:
        raise SpecInvalid("the model spec is not valid", detail=spec_errors(exc)) from None


def parse_data_shape(value: Any) -> DataShape:
    """Validate a data shape (a mapping, a :class:`DataShape`, or any pydantic model with
    a dataset feature spec's fields, :class:`~peertrain.common.events.datasets.FeatureSpec`
    among them).

    Raises
    ------
    SpecInvalid
        With one ``{"loc", "msg"}`` item per problem in ``detail``.
    """
    if isinstance(value, DataShape):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump()
    try:
        return DataShape.model_validate(value)
    except ValidationError as exc:
        raise SpecInvalid("the feature spec is not valid", detail=spec_errors(exc)) from None
