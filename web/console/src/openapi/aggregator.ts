// Generated from docs/openapi/aggregator.json by web/console/types.mjs (openapi-typescript): do
// not edit. After changing a service's HTTP models, run `make openapi`.
export interface paths {
    "/api/models/{job_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A job's model versions, their metrics, and whether the final model exists
         * @description Versions in order, each with its key, sha256, time and holdout metrics.
         */
        get: operations["get_models_api_models__job_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/models/{job_id}/final": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download the final model
         * @description ``final.pt`` (``torch.load(f, weights_only=True)``) or ``final.safetensors``.
         */
        get: operations["get_final_api_models__job_id__final_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/models/{job_id}/versions/{version}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download one model version, or the best one
         * @description Any model version of the job, whatever its state (running, completed, cancelled,
         *     failed), as a file like ``final.pt`` or ``final.safetensors``: the same specs and
         *     preprocessing ride along, so ``peertrain predict`` and ``peertrain convert`` take it.
         *
         *     ``best`` is the evaluated version with the highest holdout accuracy; ties go to the
         *     lower holdout loss, then to the later version; versions not evaluated yet (or found
         *     non-finite) never count. The version sent is in ``X-Model-Version``, the file's
         *     sha256 in ``X-Content-SHA256``.
         */
        get: operations["get_version_api_models__job_id__versions__version__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/models/weights": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upload starting weights (safetensors, or a .pt state dict)
         * @description The body is the file itself: a safetensors file, or a ``.pt`` file holding a state
         *     dict (``torch.save(model.state_dict(), f)``, or a ``final.pt``), read with
         *     ``torch.load(weights_only=True)``: anything but tensors is refused unread. Stored
         *     as safetensors; a job starts from them with ``init_weights``, checked then against
         *     its model (names, shapes, dtypes).
         */
        post: operations["upload_weights_api_models_weights_post"];
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
         * Evaluation
         * @description A version's metrics on the job's holdout.
         */
        Evaluation: {
            /** Accuracy */
            accuracy: number;
            /** Evaluated At */
            evaluated_at: string | null;
            /** Loss */
            loss: number;
            /** Per Class Accuracy */
            per_class_accuracy: (number | null)[];
            /** Samples */
            samples: number;
        };
        /**
         * FinalPublic
         * @description The exported final model (download it from ``/{job_id}/final``).
         */
        FinalPublic: {
            /** Pt Key */
            pt_key: string;
            /** Pt Sha256 */
            pt_sha256: string;
            /** Safetensors Key */
            safetensors_key: string;
            /** Safetensors Sha256 */
            safetensors_sha256: string;
            /** Version */
            version: number;
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
         * JobModelsPublic
         * @description Every model version of one job.
         */
        JobModelsPublic: {
            /**
             * Best Version
             * @description The evaluated version with the highest holdout accuracy (ties: lower loss, then the later version); download it at `versions/best`
             */
            best_version?: number | null;
            final: components["schemas"]["FinalPublic"] | null;
            /** Final Available */
            final_available: boolean;
            /** Job Id */
            job_id: string;
            /** Latest Version */
            latest_version: number | null;
            /** Rounds */
            rounds: number | null;
            /** Versions */
            versions: components["schemas"]["VersionPublic"][];
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
         * TensorInfo
         * @description One tensor of a state dict: its name, dtype (safetensors' code, e.g. ``F32``)
         *     and shape.
         */
        TensorInfo: {
            /** Dtype */
            dtype: string;
            /** Name */
            name: string;
            /** Shape */
            shape: number[];
        };
        /**
         * VersionPublic
         * @description One stored model version.
         */
        VersionPublic: {
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            evaluation: components["schemas"]["Evaluation"] | null;
            /** Key */
            key: string;
            /** Parent Version */
            parent_version: number | null;
            /** Peers */
            peers: string[];
            /** Sha256 */
            sha256: string;
            /** Shards */
            shards: number[];
            /** Size */
            size: number;
            /** Strategy */
            strategy: string;
            /** Updates */
            updates: string[];
            /** Version */
            version: number;
        };
        /**
         * WeightsAccepted
         * @description Starting weights stored: start a job from them with ``init_weights``.
         */
        WeightsAccepted: {
            /** Name */
            name: string;
            /**
             * Parameters
             * @description Values in all its tensors
             */
            parameters: number;
            /** Sha256 */
            sha256: string;
            /**
             * Size
             * @description Bytes stored (as safetensors)
             */
            size: number;
            /** Tensors */
            tensors: components["schemas"]["TensorInfo"][];
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
    get_models_api_models__job_id__get: {
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
                    "application/json": components["schemas"]["JobModelsPublic"];
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
            /** @description Valid credentials, but not allowed; or a quota is used up (quota_exceeded) */
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
    get_final_api_models__job_id__final_get: {
        parameters: {
            query?: {
                format?: "pt" | "safetensors";
            };
            header?: never;
            path: {
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": unknown;
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
            /** @description Valid credentials, but not allowed; or a quota is used up (quota_exceeded) */
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
            /** @description The final model is not exported yet */
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
    get_version_api_models__job_id__versions__version__get: {
        parameters: {
            query?: {
                format?: "pt" | "safetensors";
            };
            header?: never;
            path: {
                job_id: string;
                /** @description A version number (0 is the starting model), or `best` */
                version: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": unknown;
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
            /** @description Valid credentials, but not allowed; or a quota is used up (quota_exceeded) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such job (or not yours), or no such version (`version_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description `best` was asked for and no version is evaluated yet (`no_evaluated_version`) */
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
    upload_weights_api_models_weights_post: {
        parameters: {
            query?: {
                /** @description A name to know them by */
                name?: string | null;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/octet-stream": string;
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WeightsAccepted"];
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
            /** @description The body did not arrive in time (a total deadline, not per read) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Over the size cap */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not weights a job can start from */
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
