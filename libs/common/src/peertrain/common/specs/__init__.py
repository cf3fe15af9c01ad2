"""The job spec contract, without torch: model, training (with its learning-rate
schedule and update compression) and aggregation blocks.

The orchestrator validates a job with these; :mod:`peertrain.ml` builds and trains
from the same models.
"""

from .aggregation import (
    AGGREGATION_MODES,
    AGGREGATION_STRATEGIES,
    AggregationMode,
    AggregationName,
    AggregationSpec,
    Calibration,
    VerifySpec,
    parse_aggregation_spec,
)
from .augment import AugmentSpec, ColorJitter
from .compression import CompressionKind, CompressionSpec
from .errors import SpecInvalid
from .graph import GraphNode, GraphSpec
from .graph_check import MAX_GRAPH_ACTIVATIONS_PER_SAMPLE, check_graph, infer_graph
from .model import (
    MAX_ACTIVATIONS_PER_SAMPLE,
    MAX_PARAMETERS,
    AnyModelSpec,
    CNNSpec,
    DataShape,
    LogRegSpec,
    MLPSpec,
    ModelSpec,
    NamedArchSpec,
    parse_data_shape,
    parse_model_spec,
    spec_errors,
)
from .schedule import ConstantSchedule, CosineSchedule, LrSchedule, StepSchedule, lr_for_round
from .shapes import check_budget, cnn_block_shapes, count_parameters, resolve_model, state_shapes
from .sharding import SHARDING_STRATEGIES, ShardingName, ShardingSpec
from .summary import LayerSummary, ModelSummary, model_summary
from .training import TrainingParams, derive_seed, parse_training_params
from .zoo_graph import zoo_graph

__all__ = [
    "AGGREGATION_MODES",
    "AGGREGATION_STRATEGIES",
    "MAX_ACTIVATIONS_PER_SAMPLE",
    "MAX_GRAPH_ACTIVATIONS_PER_SAMPLE",
    "MAX_PARAMETERS",
    "SHARDING_STRATEGIES",
    "AggregationMode",
    "AggregationName",
    "AggregationSpec",
    "AnyModelSpec",
    "AugmentSpec",
    "CNNSpec",
    "Calibration",
    "ColorJitter",
    "CompressionKind",
    "CompressionSpec",
    "ConstantSchedule",
    "CosineSchedule",
    "DataShape",
    "GraphNode",
    "GraphSpec",
    "LayerSummary",
    "LogRegSpec",
    "LrSchedule",
    "MLPSpec",
    "ModelSpec",
    "ModelSummary",
    "NamedArchSpec",
    "ShardingName",
    "ShardingSpec",
    "SpecInvalid",
    "StepSchedule",
    "TrainingParams",
    "VerifySpec",
    "check_budget",
    "check_graph",
    "cnn_block_shapes",
    "count_parameters",
    "derive_seed",
    "infer_graph",
    "lr_for_round",
    "model_summary",
    "parse_aggregation_spec",
    "parse_data_shape",
    "parse_model_spec",
    "parse_training_params",
    "resolve_model",
    "spec_errors",
    "state_shapes",
    "zoo_graph",
]
