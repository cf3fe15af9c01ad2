// Generated from docs/openapi/orchestrator.json by web/console/types.mjs (openapi-typescript): do
// not edit. After changing a service's HTTP models, run `make openapi`.
export interface paths {
    "/api/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your jobs, newest first (every job, for an admin)
         * @description One line per job: state, round, latest holdout metrics.
         */
        get: operations["list_jobs_api_jobs_get"];
        put?: never;
        /**
         * Create a training job (or only check it: dry_run=true)
         * @description Checked against the datasets and peers the orchestrator knows; sharding follows.
         */
        post: operations["create_job_api_jobs_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/jobs/{job_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One job: state, round, peers and tasks, latest metrics
         * @description A failed task shows the peer's error and traceback.
         */
        get: operations["get_job_api_jobs__job_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/jobs/{job_id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a running job
         * @description Peers get ``peer.<id>.cancel`` and stop their task.
         */
        post: operations["cancel_job_api_jobs__job_id__cancel_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/jobs/{job_id}/config": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The job's config.json
         * @description Written once the data is sharded (404 before).
         */
        get: operations["get_config_api_jobs__job_id__config_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/jobs/{job_id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The job's events (its lineage), in log order
         * @description Job, sharding and model events.
         */
        get: operations["get_events_api_jobs__job_id__events_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/jobs/{job_id}/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Per round holdout metrics, per peer epoch metrics
         * @description Holdout loss and accuracy of each model version; training metrics peers reported.
         */
        get: operations["get_metrics_api_jobs__job_id__metrics_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/jobs/{job_id}/model": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The job's model: its layers, their output shapes and parameters
         * @description Computed from the job's model spec and its data's shape, without torch: a layer
         *     graph's nodes, a named architecture's graph, the zoo models' layers.
         */
        get: operations["get_model_api_jobs__job_id__model_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/jobs/schema": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The JSON Schema of a job request (job.yaml / job.json)
         * @description Public (no login): editors and ``peertrain job schema`` check job files with it.
         */
        get: operations["job_schema_api_jobs_schema_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process is alive */
        get: operations["healthz_healthz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** MongoDB, RabbitMQ and S3 all answer */
        get: operations["readyz_readyz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * AggregationSpec
         * @description The job's ``aggregation`` block.
         *
         *     Attributes
         *     ----------
         *     strategy
         *         ``fedavg``, ``fedprox``, ``fedadam``, ``trimmed_mean`` or ``median``.
         *     min_peers
         *         Fewest accepted updates a round may close with (the orchestrator's rule).
         *     round_deadline_s
         *         Seconds a round stays open (the orchestrator's rule).
         *     peer_wait_s
         *         Seconds a round (or a retry) waits for ``min_peers`` of the job's peers to be
         *         online before the job fails (``too_few_peers_online``); the orchestrator's rule.
         *     server_lr
         *         Server step; ``None`` for the strategy's default (1.0, or 0.1 for FedAdam; a new
         *         asynchronous job records :data:`ASYNC_SERVER_LR` instead, see :meth:`for_new_job`).
         *     trim_fraction
         *         Share trimmed at each end by ``trimmed_mean``.
         *     max_update_norm
         *         Updates with a larger L2 norm are rejected; also sizes the exact accumulator.
         *         ``None`` (the default): sized for the model when the job is configured,
         *         ``max(100, 3 * sqrt(values))`` for a model state of ``values`` numbers (an
         *         update moving every value by 3 on average), so a ResNet's honest updates (norms
         *         up to about 5,000) pass while a small model keeps 100. Read it as
         *         :attr:`AggregationSpec.update_bound`.
         *     norm_clip
         *         Each update a round aggregates is scaled down to at most ``norm_clip`` times the
         *         median L2 norm of the round's accepted updates (norm clipping, as DP-FedAvg
         *         does, with an adaptive bound); ``None`` turns clipping off.
         *     norm_outlier
         *         An accepted update whose norm is over ``norm_outlier`` times the median norm of
         *         its round's accepted updates is left out of the round's version when the round
         *         closes (``round.closed`` ``dropped``), and counts against its peer; ``None``
         *         leaves only the absolute ``max_update_norm``.
         *     peers_per_round
         *         How many of the job's peers get a task each round: a seeded sample, drawn afresh
         *         every round (McMahan et al.'s ``C * K``); ``None``, every peer every round. Each
         *         peer still trains only its own shard; ``min_peers`` counts within the sample.
         *     exclude_after
         *         A peer with this many refusals counted against it in a job (invalid updates,
         *         announcements for tasks not its own) is excluded from the job's later work.
         *     beta1, beta2, tau
         *         FedAdam's moment decays and adaptivity constant.
         *     over_select
         *         Stragglers (the orchestrator's rule): a round gives out this many tasks more
         *         than it needs and closes on the first ``n`` accepted updates, ``n`` being
         *         ``peers_per_round``, or every shard but ``over_select`` when that is ``None``;
         *         the tasks still open then are ended (``task.lost`` ``surplus``: no strike, their
         *         peers are told to stop, a late update is ignored). 0 (the default): a round
         *         waits for every task it gave out, or its deadline.
         *     deadline
         *         ``fixed`` (the default): every round stays open ``round_deadline_s``.
         *         ``adaptive``: ``deadline_factor`` times the ``deadline_quantile`` of the task
         *         durations (task assigned to update accepted) of the job's last closed rounds,
         *         within ``[deadline_floor_s, round_deadline_s]``; ``round_deadline_s`` until a
         *         round closed with a measured task.
         *     deadline_quantile, deadline_factor, deadline_floor_s
         *         The adaptive deadline's quantile of the measured durations, its multiple of that
         *         quantile, and the shortest deadline it sets.
         *     verify
         *         Checked work (:class:`VerifySpec`): off unless ``verify.share`` is above 0.
         *     mode
         *         ``sync`` (the default): every round waits for its peers. ``async``: buffered
         *         asynchronous rounds (FedBuff): a peer gets its next task as soon as its update
         *         is accepted, and a new version is built every ``buffer_size`` accepted updates,
         *         whatever version each started from (see ``docs/async.md``).
         *     buffer_size
         *         ``async``: accepted updates per model version (FedBuff's K); ``None``: half the
         *         job's peers, at least one (fixed when the job is configured).
         *     max_staleness
         *         ``async``: an update whose task started from a version more than this many
         *         versions older than the newest is refused (``too_stale``, not a strike) and its
         *         peer gets a fresh task.
         *     staleness_exponent
         *         ``async``: an update ``s`` versions stale is weighted ``samples / (1 + s) **
         *         staleness_exponent`` (0.5: FedBuff's ``1 / sqrt(1 + s)``; 0: staleness ignored).
         *     calibration
         *         ``async``: ``none`` (plain FedBuff) or ``cached``: each version steps on the
         *         latest update of every shard that has sent one, corrected by what the buffer's
         *         updates changed since their shard's previous one (CA2FL, Wang et al. 2024: the
         *         server keeps one update per shard). On a skewed split of uneven peers it keeps
         *         the slow peers' shards in every version (see ``docs/async.md``). FedAvg, FedProx
         *         and FedAdam only.
         */
        AggregationSpec: {
            /**
             * Beta1
             * @default 0.9
             */
            beta1: number;
            /**
             * Beta2
             * @default 0.99
             */
            beta2: number;
            /** Buffer Size */
            buffer_size?: number | null;
            /**
             * Calibration
             * @default none
             * @enum {string}
             */
            calibration: "none" | "cached";
            /**
             * Deadline
             * @default fixed
             * @enum {string}
             */
            deadline: "fixed" | "adaptive";
            /**
             * Deadline Factor
             * @default 2
             */
            deadline_factor: number;
            /**
             * Deadline Floor S
             * @default 10
             */
            deadline_floor_s: number;
            /**
             * Deadline Quantile
             * @default 0.9
             */
            deadline_quantile: number;
            /**
             * Exclude After
             * @default 3
             */
            exclude_after: number;
            /**
             * Max Staleness
             * @default 10
             */
            max_staleness: number;
            /** Max Update Norm */
            max_update_norm?: number | null;
            /**
             * Min Peers
             * @default 1
             */
            min_peers: number;
            /**
             * Mode
             * @default sync
             * @enum {string}
             */
            mode: "sync" | "async";
            /**
             * Norm Clip
             * @default 2
             */
            norm_clip: number | null;
            /**
             * Norm Outlier
             * @default 5
             */
            norm_outlier: number | null;
            /**
             * Over Select
             * @default 0
             */
            over_select: number;
            /**
             * Peer Wait S
             * @default 300
             */
            peer_wait_s: number;
            /** Peers Per Round */
            peers_per_round?: number | null;
            /**
             * Round Deadline S
             * @default 600
             */
            round_deadline_s: number;
            /** Server Lr */
            server_lr?: number | null;
            /**
             * Staleness Exponent
             * @default 0.5
             */
            staleness_exponent: number;
            /**
             * Strategy
             * @default fedavg
             * @enum {string}
             */
            strategy: "fedavg" | "fedprox" | "fedadam" | "trimmed_mean" | "median";
            /**
             * Tau
             * @default 0.001
             */
            tau: number;
            /**
             * Trim Fraction
             * @default 0.1
             */
            trim_fraction: number;
            /**
             * @default {
             *       "probation": 2,
             *       "share": 0,
             *       "tolerance": 0.001
             *     }
             */
            verify: components["schemas"]["VerifySpec"];
        };
        /**
         * AugmentSpec
         * @description The ``training.augment`` block.
         *
         *     Attributes
         *     ----------
         *     crop_padding
         *         Random crop with padding (the CIFAR recipe): the image is padded with
         *         ``crop_padding`` zero pixels on every side and a window of its own size is cut
         *         at a random place; 0: no crop.
         *     hflip
         *         Mirror each image left-right with probability 1/2.
         *     color_jitter
         *         Random brightness, contrast and saturation; ``None``: none.
         */
        AugmentSpec: {
            color_jitter?: components["schemas"]["ColorJitter"] | null;
            /**
             * Crop Padding
             * @default 0
             */
            crop_padding: number;
            /**
             * Hflip
             * @default false
             */
            hflip: boolean;
        };
        /**
         * CNNSpec
         * @description A small CNN for images: ``conv(k) -> ReLU -> maxpool(2)`` blocks, then a classifier.
         *
         *     Attributes
         *     ----------
         *     channels
         *         Output channels of each convolution block (1 to 4 blocks, at most 256 each).
         *     kernel_size
         *         Odd kernel size; padding keeps height and width (pooling halves them while both
         *         are at least 2).
         *     hidden
         *         Width of the hidden fully connected layer, ``0`` for none.
         *     dropout
         *         Dropout probability before each fully connected layer.
         */
        CNNSpec: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            arch: "cnn";
            /**
             * Channels
             * @default [
             *       32,
             *       64
             *     ]
             */
            channels: number[];
            /**
             * Dropout
             * @default 0
             */
            dropout: number;
            /**
             * Hidden
             * @default 128
             */
            hidden: number;
            /**
             * Kernel Size
             * @default 3
             * @enum {integer}
             */
            kernel_size: 1 | 3 | 5 | 7;
        };
        /**
         * ColorJitter
         * @description Random colour changes, each factor drawn per image from ``[1 - x, 1 + x]``.
         *
         *     Applied in this order, as torchvision's ``ColorJitter`` defines each (with its
         *     order fixed): ``brightness`` scales the pixels; ``contrast`` blends the image with
         *     its mean grey level; ``saturation`` blends it with its grey version (RGB only: a
         *     grey image is unchanged). Results are clamped to ``[0, 1]``.
         */
        ColorJitter: {
            /**
             * Brightness
             * @default 0
             */
            brightness: number;
            /**
             * Contrast
             * @default 0
             */
            contrast: number;
            /**
             * Saturation
             * @default 0
             */
            saturation: number;
        };
        /**
         * CompressionSpec
         * @description The ``training.compression`` block.
         *
         *     Attributes
         *     ----------
         *     kind
         *         ``none`` (default), ``fp16``, ``int8`` or ``topk``.
         *     block
         *         ``int8``: values per scale; 0: one scale per tensor.
         *     ratio
         *         ``topk``: the share of each tensor's values sent (``0 < ratio <= 1``).
         */
        CompressionSpec: {
            /**
             * Block
             * @default 256
             */
            block: number;
            /**
             * Kind
             * @default none
             * @enum {string}
             */
            kind: "none" | "fp16" | "int8" | "topk";
            /**
             * Ratio
             * @default 0.01
             */
            ratio: number;
        };
        /**
         * ConstantSchedule
         * @description ``lr`` in every round (after the warmup, if any): the default.
         */
        ConstantSchedule: {
            /**
             * Kind
             * @default constant
             * @constant
             */
            kind: "constant";
            /**
             * Warmup Rounds
             * @default 0
             */
            warmup_rounds: number;
        };
        /**
         * CosineSchedule
         * @description After the warmup, ``lr`` decays along a half cosine to ``min_lr``, which it
         *     reaches at the end of the job's last round.
         */
        CosineSchedule: {
            /**
             * Kind
             * @default cosine
             * @constant
             */
            kind: "cosine";
            /**
             * Min Lr
             * @default 0
             */
            min_lr: number;
            /**
             * Warmup Rounds
             * @default 0
             */
            warmup_rounds: number;
        };
        /**
         * EllipsisArg
         * @description ``...`` in an index.
         */
        EllipsisArg: {
            /**
             * Ellipsis
             * @constant
             */
            ellipsis: true;
        };
        /**
         * ErrorBody
         * @description What went wrong: a machine-readable ``code``, a sentence, optional detail.
         */
        ErrorBody: {
            /** Code */
            code: string;
            /** Detail */
            detail?: unknown;
            /** Message */
            message: string;
        };
        /**
         * ErrorResponse
         * @description The one error shape of every PeerTrain service.
         */
        ErrorResponse: {
            error: components["schemas"]["ErrorBody"];
        };
        /**
         * EventPublic
         * @description One event of a job's lineage (``GET /api/jobs/{id}/events``).
         */
        EventPublic: {
            /** Actor */
            actor: string | null;
            /**
             * Data
             * @description The event's payload (its type's schema)
             */
            data: {
                [key: string]: unknown;
            };
            /** Id */
            id: string;
            /**
             * Occurred At
             * Format: date-time
             */
            occurred_at: string;
            /** Position */
            position: number;
            /** Producer */
            producer: string;
            /** Seq */
            seq: number;
            /** Stream */
            stream: string;
            /** Type */
            type: string;
        };
        /**
         * GraphNode
         * @description One step of the graph.
         *
         *     Attributes
         *     ----------
         *     name
         *         Unique name other nodes use to read this node's output (not ``"x"``).
         *     op
         *         A key of the allow-list (``linear``, ``relu``, ``add``, ...).
         *     module
         *         For ops with state: the dotted path of the layer (or of the parameter, for
         *         ``parameter``) in the researcher's model.
         *     inputs
         *         Positional inputs: node names and constants, bound to the op's parameters in
         *         order.
         *     args
         *         Constant keyword arguments: the layer's constructor arguments for ops with
         *         state, the op's own keyword arguments otherwise.
         */
        GraphNode: {
            /** Args */
            args?: {
                [key: string]: boolean | number | string | (boolean | number | null)[] | null;
            };
            /**
             * Inputs
             * @default []
             */
            inputs: (boolean | number | components["schemas"]["SliceArg"] | components["schemas"]["EllipsisArg"] | string | (boolean | number | components["schemas"]["SliceArg"] | components["schemas"]["EllipsisArg"] | string | null)[] | null)[];
            /** Module */
            module?: string | null;
            /** Name */
            name: string;
            /** Op */
            op: string;
        };
        /**
         * GraphSpec
         * @description A model as a graph of allow-listed ops (``{"arch": "graph", ...}``).
         *
         *     Attributes
         *     ----------
         *     input_shape
         *         One sample's shape (the dataset's ``image_shape``, or ``[flat_size]``).
         *     nodes
         *         The steps in order; each reads only earlier nodes and ``"x"``.
         *     output
         *         The node whose value is the model's output (logits, ``[num_classes]`` per sample).
         */
        GraphSpec: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            arch: "graph";
            /** Input Shape */
            input_shape: number[];
            /** Nodes */
            nodes: components["schemas"]["GraphNode"][];
            /** Output */
            output: string;
            /**
             * Version
             * @default 1
             * @constant
             */
            version: 1;
        };
        /**
         * Health
         * @description ``/healthz``: the process answers.
         */
        Health: {
            /**
             * Status
             * @constant
             */
            status: "ok";
        };
        /**
         * InitFrom
         * @description Start from another job's model version (``--init-from JOB[:vR]``).
         */
        InitFrom: {
            /** Job Id */
            job_id: string;
            /**
             * Version
             * @description The version (round); default: the job's newest
             */
            version?: number | null;
        };
        /**
         * InitialMetrics
         * @description The initial model's (version 0) holdout metrics.
         */
        InitialMetrics: {
            /** Accuracy */
            accuracy: number;
            /** Loss */
            loss: number;
            /**
             * Version
             * @default 0
             * @constant
             */
            version: 0;
        };
        /**
         * JobAccepted
         * @description ``POST /api/jobs``: the new job's id (sharding follows).
         */
        JobAccepted: {
            /** Job Id */
            job_id: string;
        };
        /**
         * JobCancelling
         * @description ``POST /api/jobs/{id}/cancel``: the job and its state after the request.
         */
        JobCancelling: {
            /** Job Id */
            job_id: string;
            /**
             * State
             * @enum {string}
             */
            state: "sharding" | "running" | "completed" | "failed" | "cancelled";
        };
        /**
         * JobChecked
         * @description ``POST /api/jobs?dry_run=true``: the request passed every check; this is the job
         *     it would create (peers in shard order, defaults filled in). Nothing was created.
         */
        JobChecked: {
            aggregation: components["schemas"]["AggregationSpec"];
            /** Dataset Id */
            dataset_id: string;
            /**
             * Dry Run
             * @default true
             * @constant
             */
            dry_run: true;
            init_from: components["schemas"]["ModelSource"] | null;
            init_weights?: components["schemas"]["WeightsSource"] | null;
            /** Model */
            model: components["schemas"]["LogRegSpec"] | components["schemas"]["MLPSpec"] | components["schemas"]["CNNSpec"] | components["schemas"]["GraphSpec"] | components["schemas"]["NamedArchSpec"];
            /** Name */
            name: string;
            /**
             * Peers
             * @description In shard order: shard k is peers[k]'s
             */
            peers: string[];
            sharding: components["schemas"]["ShardingSpec"];
            training: components["schemas"]["TrainingParams"];
        };
        /**
         * JobDetail
         * @description ``GET /api/jobs/{id}``: state, current round, peers and tasks, latest metrics.
         */
        JobDetail: {
            /**
             * Accuracy
             * @description The latest holdout accuracy
             */
            accuracy: number | null;
            aggregation: components["schemas"]["AggregationSpec"];
            /** Config Key */
            config_key: string | null;
            /** Created At */
            created_at: string | null;
            /** Current Round */
            current_round: number | null;
            /** Dataset Id */
            dataset_id: string;
            /** Error */
            error: string | null;
            /** Error Code */
            error_code: string | null;
            /** Final Version */
            final_version: number | null;
            /** Finished At */
            finished_at: string | null;
            /** @description The model version it started from */
            init_from: components["schemas"]["ModelSource"] | null;
            /** @description The uploaded weights it started from */
            init_weights?: components["schemas"]["WeightsSource"] | null;
            /** Job Id */
            job_id: string;
            latest: components["schemas"]["LatestMetrics"] | null;
            /**
             * Loss
             * @description The latest holdout loss
             */
            loss: number | null;
            /** Model */
            model: components["schemas"]["LogRegSpec"] | components["schemas"]["MLPSpec"] | components["schemas"]["CNNSpec"] | components["schemas"]["GraphSpec"] | components["schemas"]["NamedArchSpec"];
            /** Name */
            name: string;
            /** Owner Id */
            owner_id: string;
            /**
             * Peers
             * @description In shard order: shard k is peers[k]'s
             */
            peers: string[];
            /** Rejected Updates */
            rejected_updates: components["schemas"]["UpdateRejected"][];
            /** @description The current round attempt */
            round: components["schemas"]["RoundPublic"] | null;
            /** Rounds */
            rounds: number;
            sharding: components["schemas"]["ShardingSpec"];
            /**
             * State
             * @enum {string}
             */
            state: "sharding" | "running" | "completed" | "failed" | "cancelled";
            /**
             * Tasks
             * @description Every task of the current round, and failed or rejected ones of earlier
             */
            tasks: components["schemas"]["TaskPublic"][];
            training: components["schemas"]["TrainingParams"];
            /** @description The next round attempt, waiting for peers to come online */
            waiting?: components["schemas"]["WaitingPublic"] | null;
        };
        /**
         * JobMetrics
         * @description ``GET /api/jobs/{id}/metrics``: per round (holdout), per peer per epoch (training).
         */
        JobMetrics: {
            /**
             * Compression
             * @description How the job's updates travel (training.compression.kind)
             * @default none
             */
            compression: string;
            initial: components["schemas"]["InitialMetrics"] | null;
            /** Job Id */
            job_id: string;
            /** Peers */
            peers: components["schemas"]["PeerEpochMetrics"][];
            /** Rounds */
            rounds: components["schemas"]["RoundMetrics"][];
        };
        /**
         * JobRequest
         * @description The body of ``POST /api/jobs``.
         *
         *     ``model``, ``training`` and ``aggregation`` are the typed specs of
         *     :mod:`peertrain.common.specs`, validated here once (a bad one is a 422 naming where,
         *     e.g. ``model.hidden.0``); what is left to check needs the dataset and the peers.
         */
        JobRequest: {
            /**
             * @default {
             *       "beta1": 0.9,
             *       "beta2": 0.99,
             *       "calibration": "none",
             *       "deadline": "fixed",
             *       "deadline_factor": 2,
             *       "deadline_floor_s": 10,
             *       "deadline_quantile": 0.9,
             *       "exclude_after": 3,
             *       "max_staleness": 10,
             *       "min_peers": 1,
             *       "mode": "sync",
             *       "norm_clip": 2,
             *       "norm_outlier": 5,
             *       "over_select": 0,
             *       "peer_wait_s": 300,
             *       "round_deadline_s": 600,
             *       "staleness_exponent": 0.5,
             *       "strategy": "fedavg",
             *       "tau": 0.001,
             *       "trim_fraction": 0.1,
             *       "verify": {
             *         "probation": 2,
             *         "share": 0,
             *         "tolerance": 0.001
             *       }
             *     }
             */
            aggregation: components["schemas"]["AggregationSpec"];
            /** Dataset Id */
            dataset_id: string;
            /** @description Start from another of your jobs' model version instead of fresh weights: the same model spec, on data of the same shape and classes */
            init_from?: components["schemas"]["InitFrom"] | null;
            /**
             * Init Weights
             * @description Start from weights you uploaded (POST /api/models/weights, its weights_id): their tensors must be exactly the model's (names, shapes, dtypes)
             */
            init_weights?: string | null;
            /** Model */
            model?: components["schemas"]["LogRegSpec"] | components["schemas"]["MLPSpec"] | components["schemas"]["CNNSpec"] | components["schemas"]["GraphSpec"] | components["schemas"]["NamedArchSpec"];
            /** Name */
            name: string;
            /** Peers */
            peers?: string[] | null;
            selection?: components["schemas"]["PeerSelection"] | null;
            /**
             * @default {
             *       "alpha": 0.5,
             *       "strategy": "iid"
             *     }
             */
            sharding: components["schemas"]["ShardingRequest"];
            /**
             * @default {
             *       "batch_norm": "aggregate",
             *       "batch_size": 32,
             *       "channels_last": false,
             *       "compression": {
             *         "block": 256,
             *         "kind": "none",
             *         "ratio": 0.01
             *       },
             *       "freeze": [],
             *       "head": [],
             *       "label_smoothing": 0,
             *       "local_epochs": 1,
             *       "lr": 0.01,
             *       "lr_schedule": {
             *         "kind": "constant",
             *         "warmup_rounds": 0
             *       },
             *       "momentum": 0,
             *       "nesterov": false,
             *       "optimizer": "sgd",
             *       "precision": "fp32",
             *       "proximal_mu": 0,
             *       "rounds": 10,
             *       "seed": 0,
             *       "weight_decay": 0
             *     }
             */
            training: components["schemas"]["TrainingParams"];
        };
        /**
         * JobSummary
         * @description One line of ``GET /api/jobs``.
         */
        JobSummary: {
            /**
             * Accuracy
             * @description The latest holdout accuracy
             */
            accuracy: number | null;
            /** Created At */
            created_at: string | null;
            /** Current Round */
            current_round: number | null;
            /** Dataset Id */
            dataset_id: string;
            /** Finished At */
            finished_at: string | null;
            /** Job Id */
            job_id: string;
            /**
             * Loss
             * @description The latest holdout loss
             */
            loss: number | null;
            /** Name */
            name: string;
            /**
             * Peers
             * @description How many peers the job runs on
             */
            peers: number;
            /** Rounds */
            rounds: number;
            /**
             * State
             * @enum {string}
             */
            state: "sharding" | "running" | "completed" | "failed" | "cancelled";
        };
        /**
         * LatestMetrics
         * @description The holdout metrics of the job's newest evaluated model version.
         */
        LatestMetrics: {
            /** Accuracy */
            accuracy: number;
            /** Loss */
            loss: number;
            /** Round */
            round: number;
            /** Version */
            version: number;
        };
        /**
         * LayerSummary
         * @description One node of the model's graph.
         */
        LayerSummary: {
            /**
             * Module
             * @description For a layer with state: its path in the model's state dict
             */
            module: string | null;
            /**
             * Name
             * @description The node's name (for the zoo's models: its path, dots as _)
             */
            name: string;
            /**
             * Op
             * @description The op (linear, conv2d, relu, add, ...)
             */
            op: string;
            /**
             * Output
             * @description The output shape, N for the batch: [N, 64, 56, 56]
             */
            output: string;
            /**
             * Parameters
             * @description Values the layer adds to the state dict (buffers included); 0 for a layer used again (counted at its first node)
             */
            parameters: number;
            /**
             * Shape
             * @description The output shape with -1 for the batch, when the output is a tensor
             */
            shape: number[] | null;
        };
        /**
         * LogRegSpec
         * @description Multinomial logistic regression: one linear layer on the flattened input.
         */
        LogRegSpec: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            arch: "logreg";
        };
        /**
         * MLPSpec
         * @description Multi-layer perceptron on the flattened input.
         *
         *     Attributes
         *     ----------
         *     hidden
         *         Width of each hidden layer (at most 8 layers of at most 16,384 units).
         *     dropout
         *         Dropout probability after each hidden activation.
         *     activation
         *         ``relu``, ``tanh`` or ``gelu``.
         */
        MLPSpec: {
            /**
             * Activation
             * @default relu
             * @enum {string}
             */
            activation: "relu" | "tanh" | "gelu";
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            arch: "mlp";
            /**
             * Dropout
             * @default 0
             */
            dropout: number;
            /**
             * Hidden
             * @default [
             *       128
             *     ]
             */
            hidden: number[];
        };
        /**
         * ModelSource
         * @description Another job's model version a job starts from (its version 0 is a copy).
         */
        ModelSource: {
            /** Job Id */
            job_id: string;
            /** Key */
            key: string;
            /** Sha256 */
            sha256: string;
            /** Version */
            version: number;
        };
        /**
         * ModelSummary
         * @description A model's architecture: ``GET /api/jobs/{id}/model``.
         */
        ModelSummary: {
            /**
             * Activations
             * @description Values all nodes produce for one sample
             */
            activations: number;
            /**
             * Arch
             * @description logreg, mlp, cnn, graph or torchvision
             */
            arch: string;
            /**
             * Input Shape
             * @description One sample's shape
             */
            input_shape: number[];
            /**
             * Layers
             * @description Every node, in order
             */
            layers: components["schemas"]["LayerSummary"][];
            /**
             * Name
             * @description A named architecture's name (resnet18, ...)
             */
            name: string | null;
            /**
             * Parameters
             * @description Values in the model's state dict, buffers included (count_parameters)
             */
            parameters: number;
        };
        /**
         * NamedArchSpec
         * @description A named architecture, adapted to the dataset's channels and classes.
         *
         *     Attributes
         *     ----------
         *     name
         *         torchvision's ``resnet18``, ``resnet34``, ``resnet50``, ``mobilenet_v3_small``,
         *         ``efficientnet_b0``, ``vgg11_bn`` (with a CIFAR-sized head: global pooling and
         *         one linear layer), or He et al.'s CIFAR ResNets ``resnet20`` and ``resnet56``.
         *     cifar_stem
         *         For the torchvision ResNets: a 3x3 stride-1 first convolution and no max-pool,
         *         for 32x32 images.
         */
        NamedArchSpec: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            arch: "torchvision";
            /**
             * Cifar Stem
             * @default false
             */
            cifar_stem: boolean;
            /**
             * Name
             * @enum {string}
             */
            name: "resnet18" | "resnet34" | "resnet50" | "mobilenet_v3_small" | "efficientnet_b0" | "vgg11_bn" | "resnet20" | "resnet56";
        };
        /** Page[EventPublic] */
        Page_EventPublic_: {
            /** Items */
            items: components["schemas"]["EventPublic"][];
            /**
             * Next Offset
             * @description The offset of the next page; null when this is the last
             */
            next_offset: number | null;
        };
        /** Page[JobSummary] */
        Page_JobSummary_: {
            /** Items */
            items: components["schemas"]["JobSummary"][];
            /**
             * Next Offset
             * @description The offset of the next page; null when this is the last
             */
            next_offset: number | null;
        };
        /**
         * PeerEpochMetrics
         * @description What a peer reported after one local epoch of one task.
         */
        PeerEpochMetrics: {
            /** Accuracy */
            accuracy: number | null;
            /** Duration S */
            duration_s: number;
            /** Epoch */
            epoch: number;
            /** Epochs */
            epochs: number;
            /** Loss */
            loss: number | null;
            /** Peer Id */
            peer_id: string;
            /** Round */
            round: number;
            /** Samples */
            samples: number;
            /** Shard */
            shard: number;
            /** Task Id */
            task_id: string;
        };
        /**
         * PeerSelection
         * @description Let the orchestrator pick ``count`` usable peers: the caller's own first, then the
         *     fastest it measured, then by claimed memory (capped).
         */
        PeerSelection: {
            /** Count */
            count: number;
            /** @default {} */
            filters: components["schemas"]["SelectionFilters"];
        };
        /**
         * Readiness
         * @description ``/readyz``: every dependency answers (``"ok"`` each).
         */
        Readiness: {
            /** Checks */
            checks: {
                [key: string]: string;
            };
            /**
             * Status
             * @constant
             */
            status: "ready";
        };
        /**
         * RoundMetrics
         * @description One model version's holdout metrics, and how its round went.
         */
        RoundMetrics: {
            /** Accuracy */
            accuracy: number;
            /**
             * Bytes Down Per Peer
             * @description Bytes of the model version each peer of the round fetched
             */
            bytes_down_per_peer?: number | null;
            /**
             * Bytes Up
             * @description Bytes of the updates the round accepted, as uploaded
             */
            bytes_up?: number | null;
            /**
             * Bytes Up Dense
             * @description What those updates' tensors weigh in float32 (absent for old events)
             */
            bytes_up_dense?: number | null;
            /** Duration S */
            duration_s: number | null;
            /** Loss */
            loss: number;
            /**
             * Peers
             * @description Updates the round's version aggregates (its accepted ones less the norm outliers and unconfirmed checked work it left out)
             */
            peers: number | null;
            /** Per Class Accuracy */
            per_class_accuracy: (number | null)[];
            /** Round */
            round: number;
            /** Samples */
            samples: number;
            /** Version */
            version: number;
        };
        /**
         * RoundPublic
         * @description One attempt at one round.
         */
        RoundPublic: {
            /**
             * Accepted
             * @description Shards whose update the round accepted; in an asynchronous job, the shards of the updates its buffer holds (closed: that its version aggregates)
             */
            accepted: number[];
            /** Attempt */
            attempt: number;
            /** Close Reason */
            close_reason: string | null;
            /** Closed At */
            closed_at: string | null;
            /**
             * Closes On
             * @description Accepted updates the round closes on: every task it gave out, or fewer with aggregation.over_select; in an asynchronous job, buffer_size
             */
            closes_on: number;
            /**
             * Deadline
             * Format: date-time
             */
            deadline: string;
            /** Model Version */
            model_version: number;
            /**
             * Opened At
             * Format: date-time
             */
            opened_at: string;
            /** Round */
            round: number;
            /**
             * Shards
             * @description Tasks the round gave out, one per shard (peers_per_round or every shard, plus aggregation.over_select), before any reassignment
             */
            shards: number;
            /**
             * State
             * @enum {string}
             */
            state: "open" | "closed" | "failed";
            /**
             * Surplus
             * @description Shards whose task was ended when the round closed on enough updates (task.lost surplus: no strike, the peer is told to stop)
             */
            surplus: number[];
        };
        /**
         * SelectionFilters
         * @description Which peers a selection may pick.
         */
        SelectionFilters: {
            /** Device */
            device?: ("cpu" | "cuda" | "mps") | null;
            /** Min Memory Gb */
            min_memory_gb?: number | null;
        };
        /**
         * ShardingRequest
         * @description How to split the data (the seed is the training seed).
         */
        ShardingRequest: {
            /**
             * Alpha
             * @default 0.5
             */
            alpha: number;
            /**
             * Strategy
             * @default iid
             * @enum {string}
             */
            strategy: "iid" | "stratified" | "dirichlet";
        };
        /**
         * ShardingSpec
         * @description How a dataset is split into one shard per peer (deterministic per seed).
         */
        ShardingSpec: {
            /**
             * Alpha
             * @default 0.5
             */
            alpha: number;
            /**
             * Seed
             * @default 0
             */
            seed: number;
            /**
             * Strategy
             * @default iid
             * @enum {string}
             */
            strategy: "iid" | "stratified" | "dirichlet";
        };
        /**
         * SliceArg
         * @description ``start:stop:step`` in an index (``out[:, -1]``).
         */
        SliceArg: {
            /** Slice */
            slice: [
                number | null,
                number | null,
                number | null
            ];
        };
        /**
         * StepSchedule
         * @description After the warmup, ``lr`` is multiplied by ``gamma`` every ``step_rounds`` rounds.
         */
        StepSchedule: {
            /**
             * Gamma
             * @default 0.1
             */
            gamma: number;
            /**
             * Kind
             * @default step
             * @constant
             */
            kind: "step";
            /**
             * Step Rounds
             * @default 10
             */
            step_rounds: number;
            /**
             * Warmup Rounds
             * @default 0
             */
            warmup_rounds: number;
        };
        /**
         * TaskPublic
         * @description One task: a shard's training in one round, by one peer.
         */
        TaskPublic: {
            /**
             * Assigned At
             * Format: date-time
             */
            assigned_at: string;
            /** Attempt */
            attempt: number;
            /**
             * Checks
             * @description The task this one checks (aggregation.verify): trained again, compared
             */
            checks?: string | null;
            /**
             * Deadline
             * Format: date-time
             */
            deadline: string;
            /** Device */
            device: string | null;
            /** Error */
            error: string | null;
            /** Peer Id */
            peer_id: string;
            /** Reassigned From */
            reassigned_from: string | null;
            /** Round */
            round: number;
            /** Shard */
            shard: number;
            /**
             * State
             * @enum {string}
             */
            state: "assigned" | "accepted" | "updated" | "rejected" | "failed" | "lost";
            /** Task Id */
            task_id: string;
            /** Traceback */
            traceback: string | null;
        };
        /**
         * TrainingParams
         * @description How peers train locally (the job's ``training`` block).
         *
         *     Attributes
         *     ----------
         *     rounds
         *         Federated rounds of the job (the orchestrator's; ignored by local training).
         *     local_epochs
         *         Passes over the local shard per round.
         *     batch_size, lr, optimizer, momentum, nesterov, weight_decay
         *         The local optimiser: ``sgd`` (with ``momentum``, and Nesterov's variant when
         *         ``nesterov``), ``adam`` (``weight_decay`` as an L2 term) or ``adamw`` (decoupled
         *         weight decay).
         *     lr_schedule
         *         How ``lr`` changes over the rounds (:func:`~peertrain.common.specs.lr_for_round`);
         *         the default keeps it constant.
         *     seed
         *         The job's seed; peers derive per-round seeds from it with :func:`derive_seed`.
         *     proximal_mu
         *         FedProx's proximal coefficient; 0 disables the term.
         *     grad_clip_norm
         *         Each step's gradients are scaled to at most this L2 norm (all parameters
         *         together); ``None``: no clipping.
         *     label_smoothing
         *         Cross-entropy's label smoothing; 0: none.
         *     precision
         *         ``bf16`` or ``fp16`` autocast (``fp16`` with a gradient scaler) on CUDA peers;
         *         other peers train in ``fp32``, so CPU results stay bit-identical.
         *     channels_last
         *         Image batches and convolution weights in channels-last memory, on CUDA peers.
         *     freeze
         *         Parameters left as they are (fine-tuning): each entry a parameter's name or a
         *         prefix of names (``layer1`` freezes ``layer1.0.conv1.weight``...).
         *     head, head_lr
         *         Parameters (names or prefixes, as ``freeze``) trained at ``head_lr`` instead of
         *         ``lr`` (the schedule scales both alike).
         *     batch_norm
         *         ``aggregate`` (default): BatchNorm layers (weights, biases, running statistics)
         *         are aggregated like every other tensor. ``local`` (FedBN, Li et al., 2021):
         *         each peer keeps its own BatchNorm layers between its rounds of the job (in its
         *         memory: a peer that restarts starts again from the global ones), trains with
         *         them in place of the received ones, and still sends its delta relative to the
         *         received version, so the global (exported) model's BatchNorm layers are the
         *         aggregate of the peers' own. A peer-side rule: the server aggregates as usual.
         *     augment
         *         Image augmentation of each training batch on the peers (random crop with
         *         padding, horizontal flip, colour jitter; :class:`~.augment.AugmentSpec`); only
         *         for image datasets stored as pixels. ``None``: none.
         *     compression
         *         How the peers' updates travel (:class:`~.compression.CompressionSpec`):
         *         ``none`` (float32, the default), ``fp16``, ``int8`` or ``topk`` (with error
         *         feedback kept on the peer between its rounds of the job).
         */
        TrainingParams: {
            augment?: components["schemas"]["AugmentSpec"] | null;
            /**
             * Batch Norm
             * @default aggregate
             * @enum {string}
             */
            batch_norm: "aggregate" | "local";
            /**
             * Batch Size
             * @default 32
             */
            batch_size: number;
            /**
             * Channels Last
             * @default false
             */
            channels_last: boolean;
            /**
             * @default {
             *       "block": 256,
             *       "kind": "none",
             *       "ratio": 0.01
             *     }
             */
            compression: components["schemas"]["CompressionSpec"];
            /**
             * Freeze
             * @default []
             */
            freeze: string[];
            /** Grad Clip Norm */
            grad_clip_norm?: number | null;
            /**
             * Head
             * @default []
             */
            head: string[];
            /** Head Lr */
            head_lr?: number | null;
            /**
             * Label Smoothing
             * @default 0
             */
            label_smoothing: number;
            /**
             * Local Epochs
             * @default 1
             */
            local_epochs: number;
            /**
             * Lr
             * @default 0.01
             */
            lr: number;
            /**
             * Lr Schedule
             * @default {
             *       "kind": "constant",
             *       "warmup_rounds": 0
             *     }
             */
            lr_schedule: components["schemas"]["ConstantSchedule"] | components["schemas"]["CosineSchedule"] | components["schemas"]["StepSchedule"];
            /**
             * Momentum
             * @default 0
             */
            momentum: number;
            /**
             * Nesterov
             * @default false
             */
            nesterov: boolean;
            /**
             * Optimizer
             * @default sgd
             * @enum {string}
             */
            optimizer: "sgd" | "adam" | "adamw";
            /**
             * Precision
             * @default fp32
             * @enum {string}
             */
            precision: "fp32" | "bf16" | "fp16";
            /**
             * Proximal Mu
             * @default 0
             */
            proximal_mu: number;
            /**
             * Rounds
             * @default 10
             */
            rounds: number;
            /**
             * Seed
             * @default 0
             */
            seed: number;
            /**
             * Weight Decay
             * @default 0
             */
            weight_decay: number;
        };
        /**
         * UpdateRejected
         * @description A peer's update was refused; ``code`` is machine-readable, ``reason`` says why.
         */
        UpdateRejected: {
            /** Attempt */
            attempt: number;
            /** Code */
            code: string;
            /** Job Id */
            job_id: string;
            /** Peer Id */
            peer_id: string;
            /** Reason */
            reason: string;
            /** Round */
            round: number;
            /** Shard */
            shard?: number | null;
            /**
             * Strike
             * @default false
             */
            strike: boolean;
            /** Task Id */
            task_id: string;
        };
        /**
         * VerifySpec
         * @description The ``aggregation.verify`` block: which tasks are trained twice, and how close two
         *     honest updates of one task are.
         *
         *     A checked task is trained again by another of the job's online peers, from the same
         *     model version, shard and seed; the aggregator compares the two updates and, when
         *     they disagree, a third peer trains it too (the tie-break; a fourth if the third
         *     agrees with neither). A peer whose update the others do not confirm gets a strike
         *     (``check_mismatch``) and its update leaves the round for the confirmed one. Which
         *     tasks are checked:
         *
         *     * every task of a peer with fewer than ``probation`` confirmations (a task of its own
         *       whose update another peer's agreed with) in the job: a newcomer's first tasks;
         *     * every task of a peer with a strike in the job (escalation);
         *     * ``share`` of the other tasks, by a seeded hash of the round and shard (and the
         *       task's number, in an asynchronous job).
         *
         *     Checks and tie-breaks go to peers already confirmed (and never struck) where there
         *     are such, so a lazy checker rarely decides anything. In an asynchronous job a checked
         *     update joins a version only once its check confirmed it, and its peer waits for that
         *     before its next task (docs/checked-work.md).
         *
         *     Attributes
         *     ----------
         *     share
         *         Share of the tasks of confirmed peers that are checked; 0 (the default) turns
         *         checking off altogether, probation and escalation included.
         *     tolerance
         *         The largest relative distance ``||a - b|| / max(||a||, ||b||)`` at which two
         *         updates of one task agree. Calibrated on honest runs: 1.4e-7 between 1 and 2
         *         CPU threads; a lazy update is at 0.89 (a tenth of the shard) to 1.41 (noise).
         *     probation
         *         Confirmed tasks of its own a peer needs in a job before only ``share`` of its
         *         tasks is checked (2: a peer honest once, then lazy, is still checked).
         */
        VerifySpec: {
            /**
             * Probation
             * @default 2
             */
            probation: number;
            /**
             * Share
             * @default 0
             */
            share: number;
            /**
             * Tolerance
             * @default 0.001
             */
            tolerance: number;
        };
        /**
         * WaitingPublic
         * @description A round attempt that waits for the job's peers to come online.
         */
        WaitingPublic: {
            /** Attempt */
            attempt: number;
            /**
             * Needed
             * @description Peers online it opens with
             */
            needed: number;
            /**
             * Online
             * @description The job's peers online when the wait began
             */
            online: number;
            /** Round */
            round: number;
            /**
             * Since
             * Format: date-time
             */
            since: string;
            /**
             * Until
             * Format: date-time
             * @description When the job fails if they are not (peer_wait_s)
             */
            until: string;
        };
        /**
         * WeightsSource
         * @description Uploaded weights a job starts from (its version 0 is these tensors).
         */
        WeightsSource: {
            /** Key */
            key: string;
            /** Sha256 */
            sha256: string;
            /** Weights Id */
            weights_id: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    list_jobs_api_jobs_get: {
        parameters: {
            query?: {
                /** @description Only jobs on this dataset */
                dataset_id?: string | null;
                /** @description Most items in the page */
                limit?: number;
                /** @description Only jobs whose name holds this (any case) */
                name?: string | null;
                /** @description Items to skip (a page's next_offset) */
                offset?: number;
                /** @description Only jobs in this state */
                state?: ("sharding" | "running" | "completed" | "failed" | "cancelled") | null;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_JobSummary_"];
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token (this is a user's route) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    create_job_api_jobs_post: {
        parameters: {
            query?: {
                /** @description Only check the request (every check a creation makes): answers 200 with the job it would create; no job, no event */
                dry_run?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["JobRequest"];
            };
        };
        responses: {
            /** @description dry_run=true: every check passed; nothing was created */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobChecked"];
                };
            };
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobAccepted"];
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token, or the running-jobs quota is used up (quota_exceeded) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such dataset (or not yours) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The dataset is not validated, or the peers cannot take part (unknown, offline, disabled, outdated, too few for the selection): each one named with why in detail.peers, any other problem in detail.problems */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid: every problem at once, one {loc, msg} item each (a spec, a peer list, the model's size) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    get_job_api_jobs__job_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobDetail"];
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token (this is a user's route) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such job (or not yours) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    cancel_job_api_jobs__job_id__cancel_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobCancelling"];
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token (this is a user's route) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such job (or not yours) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The job already ended */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    get_config_api_jobs__job_id__config_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The config.json peers and the aggregator train from */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token (this is a user's route) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such job (or not yours), or no config yet */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    get_events_api_jobs__job_id__events_get: {
        parameters: {
            query?: {
                /** @description Most items in the page */
                limit?: number;
                /** @description Items to skip (a page's next_offset) */
                offset?: number;
            };
            header?: never;
            path: {
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_EventPublic_"];
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token (this is a user's route) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such job (or not yours) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    get_metrics_api_jobs__job_id__metrics_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobMetrics"];
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token (this is a user's route) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such job (or not yours) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    get_model_api_jobs__job_id__model_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelSummary"];
                };
            };
            /** @description No valid credentials (missing, invalid or expired) */
            401: {
                headers: {
                    /** @description Bearer */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A peer's token (this is a user's route) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such job (or not yours), or its dataset is gone */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    job_schema_api_jobs_schema_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description The request is not valid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The service is starting (or a dependency is away) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    healthz_healthz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    readyz_readyz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Readiness"];
                };
            };
            /** @description Starting, or a dependency does not answer (detail: each dependency's problem, null where it answers) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
}
