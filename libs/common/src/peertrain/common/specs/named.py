"""Named architectures: ``{"arch": "torchvision", "name": "resnet18"}`` instead of a graph.

Each name stands for a layer graph stored with this package (``archs/<name>.json``,
written by ``deploy/archs.py`` from torchvision's definitions and He et al.'s CIFAR
ResNets), expanded here, torch-free, for the dataset: its channels at the stem
convolution, its classes at the head, its image size as the input. Peers and services
build the expanded graph like any other (:mod:`.graph`); nobody needs torchvision.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from .errors import SpecInvalid
from .graph import GraphSpec

__all__ = ["ARCHS", "ArchTemplate", "NamedArchSpec", "named_graph"]

ArchName = Literal[
    "resnet18",
    "resnet34",
    "resnet50",
    "mobilenet_v3_small",
    "efficientnet_b0",
    "vgg11_bn",
    "resnet20",
    "resnet56",
]
_CIFAR_STEMS = ("resnet18", "resnet34", "resnet50")
ARCHS: tuple[str, ...] = (
    *ArchName.__args__,  # type: ignore[attr-defined]
    *(f"{name}-cifar" for name in _CIFAR_STEMS),
)
"""Every stored graph: each name, and the ResNets with the CIFAR stem (``-cifar``)."""

_DIR = Path(__file__).resolve().parent / "archs"


class NamedArchSpec(BaseModel):
    """A named architecture, adapted to the dataset's channels and classes.

    Attributes
    ----------
    name
        torchvision's ``resnet18``, ``resnet34``, ``resnet50``, ``mobilenet_v3_small``,
        ``efficientnet_b0``, ``vgg11_bn`` (with a CIFAR-sized head: global pooling and
        one linear layer), or He et al.'s CIFAR ResNets ``resnet20`` and ``resnet56``.
    cifar_stem
        For the torchvision ResNets: a 3x3 stride-1 first convolution and no max-pool,
        for 32x32 images.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    arch: Literal["torchvision"]
    name: ArchName
    cifar_stem: bool = False

    @model_validator(mode="after")
    def _stem_is_offered(self) -> NamedArchSpec:
        if self.cifar_stem and self.name not in _CIFAR_STEMS:
            raise ValueError(
                f"cifar_stem is offered for {', '.join(_CIFAR_STEMS)}, not {self.name}"
            )
        return self

    @property
    def template(self) -> str:
        """The stored graph's name."""
        return f"{self.name}-cifar" if self.cifar_stem else self.name


class ArchTemplate(BaseModel):
    """A stored graph and the nodes adapted to a dataset: ``stem`` (a convolution, its
    ``in_channels``) and ``head`` (the output linear layer, its ``out_features``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    stem: str
    head: str
    graph: GraphSpec


@cache
def _template(name: str) -> ArchTemplate:
    text = (_DIR / f"{name}.json").read_text(encoding="utf-8")
    return ArchTemplate.model_validate(json.loads(text))


def named_graph(
    spec: NamedArchSpec, image_shape: tuple[int, ...] | None, classes: int
) -> GraphSpec:
    """The graph ``spec`` names, for images of ``image_shape`` and ``classes`` classes.

    Raises
    ------
    SpecInvalid
        For data that are not images (a table's rows have no channels to convolve).
    """
    if image_shape is None or len(image_shape) != 3:
        msg = f"{spec.name} takes images: the dataset has no image_shape"
        raise SpecInvalid(msg, detail=[{"loc": "model.name", "msg": msg}])
    template = _template(spec.template)
    nodes = []
    for node in template.graph.nodes:
        if node.name == template.stem:
            node = node.model_copy(update={"args": {**node.args, "in_channels": image_shape[0]}})
        elif node.name == template.head:
            node = node.model_copy(update={"args": {**node.args, "out_features": classes}})
        nodes.append(node)
    return template.graph.model_copy(
        update={"input_shape": tuple(image_shape), "nodes": tuple(nodes)}
    )
