// Generated from docs/openapi/dataset.json by web/console/types.mjs (openapi-typescript): do
// not edit. After changing a service's HTTP models, run `make openapi`.
export interface paths {
    "/api/datasets/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The caller's datasets, newest first
         * @description Validating, validated and rejected datasets (not deleted ones).
         */
        get: operations["list_datasets_api_datasets__get"];
        put?: never;
        /**
         * Upload a dataset (streamed to storage; validation follows)
         * @description The body streams to object storage as it arrives, with its SHA-256 computed on the
         *     way; a body over the cap is refused (413) as soon as it passes the cap, one that
         *     would pass the user's quota (datasets kept, bytes stored) with 403, and one that
         *     does not arrive in time with 408.
         */
        post: operations["upload_api_datasets__post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/datasets/{dataset_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One dataset
         * @description Status (``validating``, ``validated``, ``rejected`` with the reason), counts, schema,
         *     label column and classes.
         */
        get: operations["read_dataset_api_datasets__dataset_id__get"];
        put?: never;
        post?: never;
        /**
         * Delete a dataset and its objects
         * @description The owner only. Shards already written for jobs stay with those jobs.
         */
        delete: operations["remove_dataset_api_datasets__dataset_id__delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/datasets/{dataset_id}/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The first rows
         * @description The first rows as uploaded (trimmed); image datasets list their first files.
         */
        get: operations["read_preview_api_datasets__dataset_id__preview_get"];
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
         * ColumnSchema
         * @description One column of an uploaded table as inferred by validation.
         *
         *     ``type`` is ``numeric``, ``boolean`` (true/false, yes/no), ``categorical`` (strings),
         *     ``empty`` (only missing values: not used as a feature), ``label`` (the label
         *     column) or ``image`` (an image dataset's pixels).
         */
        ColumnSchema: {
            /** Distinct */
            distinct?: number | null;
            /**
             * Missing
             * @default 0
             */
            missing: number;
            /** Name */
            name: string;
            /**
             * Non Number Examples
             * @default []
             */
            non_number_examples: string[];
            /**
             * Non Numbers
             * @default 0
             */
            non_numbers: number;
            /** Reason */
            reason?: string | null;
            /**
             * Type
             * @enum {string}
             */
            type: "numeric" | "boolean" | "categorical" | "empty" | "label" | "image";
        };
        /**
         * DatasetAccepted
         * @description An upload was stored; validation runs next.
         */
        DatasetAccepted: {
            /** Dataset Id */
            dataset_id: string;
            /**
             * Status
             * @default validating
             * @constant
             */
            status: "validating";
        };
        /**
         * DatasetErrorView
         * @description Why a dataset was rejected.
         */
        DatasetErrorView: {
            /** Code */
            code: string;
            /** Detail */
            detail?: {
                [key: string]: unknown;
            } | null;
            /** Message */
            message: string;
        };
        /**
         * DatasetPublic
         * @description A dataset as its owner sees it.
         */
        DatasetPublic: {
            /** Class Counts */
            class_counts?: number[] | null;
            /** Classes */
            classes?: string[] | null;
            /** Columns */
            columns?: number | null;
            /** Created At */
            created_at?: string | null;
            error?: components["schemas"]["DatasetErrorView"] | null;
            /** Filename */
            filename: string;
            /** Holdout Rows */
            holdout_rows?: number | null;
            /** Holdout Seed */
            holdout_seed?: number | null;
            /** Id */
            id: string;
            image?: components["schemas"]["ImageEncoding"] | null;
            /** Input Shape */
            input_shape?: number[] | null;
            /** Kind */
            kind?: ("table" | "images") | null;
            /** Label Column */
            label_column?: string | null;
            /** Missing Values */
            missing_values?: string[] | null;
            /** Name */
            name: string;
            /** Notes */
            notes?: string[] | null;
            /** Rows */
            rows?: number | null;
            /** Schema */
            schema?: components["schemas"]["ColumnSchema"][] | null;
            /** Sha256 */
            sha256: string;
            /** Size */
            size: number;
            /**
             * Status
             * @enum {string}
             */
            status: "validating" | "validated" | "rejected";
            /** Train Rows */
            train_rows?: number | null;
            /** Updated At */
            updated_at?: string | null;
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
         * ImageEncoding
         * @description How images became ``X[i]`` of shape ``(channels, height, width)``.
         *
         *     Each image was converted to grey (``L``, 1 channel) or ``RGB`` (3) and brought to
         *     ``width`` x ``height`` with ``resample`` as ``fit`` says: ``stretch`` resizes it
         *     to that size (its aspect ratio changes when it differs); ``crop`` resizes it to
         *     the smallest size covering ``width`` x ``height`` with its aspect ratio kept, then
         *     cuts out the centre (torchvision's ``Resize`` + ``CenterCrop``). Its pixels are
         *     then scaled to [0, 1] by ``1/255`` and standardised per channel with ``mean`` and
         *     ``std`` from the training part.
         *
         *     ``stored`` is what the training data's ``X`` holds: ``uint8`` pixels, standardised
         *     batch by batch by whoever reads them (peers augment them first), or ``float32``
         *     values already standardised (datasets validated before pixels were kept).
         */
        ImageEncoding: {
            /** Channels */
            channels: number;
            /**
             * Fit
             * @default stretch
             * @enum {string}
             */
            fit: "stretch" | "crop";
            /** Height */
            height: number;
            /** Mean */
            mean: number[];
            /**
             * Mode
             * @enum {string}
             */
            mode: "L" | "RGB";
            /**
             * Resample
             * @default bilinear
             * @constant
             */
            resample: "bilinear";
            /**
             * Scale
             * @default 0.00392156862745098
             */
            scale: number;
            /** Std */
            std: number[];
            /**
             * Stored
             * @default float32
             * @enum {string}
             */
            stored: "float32" | "uint8";
            /** Width */
            width: number;
        };
        /** Page[DatasetPublic] */
        Page_DatasetPublic_: {
            /** Items */
            items: components["schemas"]["DatasetPublic"][];
            /**
             * Next Offset
             * @description The offset of the next page; null when this is the last
             */
            next_offset: number | null;
        };
        /**
         * Preview
         * @description The first rows of a dataset, as uploaded (cells are data, never evaluated).
         */
        Preview: {
            /** Columns */
            columns: string[];
            /**
             * Kind
             * @enum {string}
             */
            kind: "table" | "images";
            /** Rows */
            rows: unknown[][];
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
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    list_datasets_api_datasets__get: {
        parameters: {
            query?: {
                /** @description Most items in the page */
                limit?: number;
                /** @description Items to skip (a page's next_offset) */
                offset?: number;
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
                    "application/json": components["schemas"]["Page_DatasetPublic_"];
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
    upload_api_datasets__post: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "multipart/form-data": {
                    /**
                     * Format: binary
                     * @description .csv, .csv.gz or .zip (recognised by content)
                     */
                    file: string;
                    /** @default 0.1 */
                    holdout_fraction?: number;
                    /** @description the holdout's seed: the same split for every upload of a file (default: one drawn from the dataset id) */
                    holdout_seed?: number;
                    /**
                     * @description image datasets: how an image of another shape becomes WIDTHxHEIGHT: crop (resized with its aspect ratio kept, centre cut out) or stretch
                     * @default crop
                     * @enum {string}
                     */
                    image_fit?: "crop" | "stretch";
                    /** @description image datasets: WIDTHxHEIGHT (default: the most common size) */
                    image_size?: string;
                    /** @description default: the last column */
                    label_column?: string;
                    /** @description tables: the cell values that mean missing, comma-separated (trimmed, compared ignoring case; the empty cell always is). Replaces the default list: 'NA', 'N/A', 'NaN', 'null', 'None', '?', '-' */
                    missing_values?: string;
                    name?: string;
                };
            };
        };
        responses: {
            /** @description Successful Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetAccepted"];
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
            /** @description The body did not arrive in time (a total deadline, not per read) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The body is over the size cap */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unsupported media type */
            415: {
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
    read_dataset_api_datasets__dataset_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                dataset_id: string;
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
                    "application/json": components["schemas"]["DatasetPublic"];
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
            /** @description Not found (or not yours) */
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
    remove_dataset_api_datasets__dataset_id__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                dataset_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
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
            /** @description Not found (or not yours) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Conflicts with the current state */
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
    read_preview_api_datasets__dataset_id__preview_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                dataset_id: string;
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
                    "application/json": components["schemas"]["Preview"];
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
            /** @description Not found (or not yours) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Conflicts with the current state */
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
