// Generated from docs/openapi/registry.json by web/console/types.mjs (openapi-typescript): do
// not edit. After changing a service's HTTP models, run `make openapi`.
export interface paths {
    "/api/registry/admin/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Drop the read model and rebuild it from the event log
         * @description Liveness is kept (it lives in memory); everything else comes back from the log.
         */
        post: operations["replay_api_registry_admin_replay_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/registry/peers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Peers you may see: yours, shared ones (all, for an admin)
         * @description ``min_memory_gb`` is the training device's memory (GPU on cuda peers, else RAM).
         */
        get: operations["list_peers_api_registry_peers_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/registry/peers/{peer_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One peer (a peer may read its own record)
         * @description Another user's unshared peer answers 404, like a missing one.
         */
        get: operations["get_peer_api_registry_peers__peer_id__get"];
        put?: never;
        post?: never;
        /**
         * Remove a peer for good (its owner or an admin): its broker access ends at once
         * @description Appends ``peer.removed``; the peer's RabbitMQ user is deleted and its connections
         *     closed. A removed peer answers 404 from then on, like one that never existed.
         */
        delete: operations["remove_peer_api_registry_peers__peer_id__delete"];
        options?: never;
        head?: never;
        /**
         * Share or disable a peer (its owner or an admin)
         * @description A disabled peer stays listed but is never selected.
         */
        patch: operations["update_peer_api_registry_peers__peer_id__patch"];
        trace?: never;
    };
    "/api/registry/peers/{peer_id}/broker-credentials": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The calling peer's own RabbitMQ credentials (a new password each time)
         * @description Only the peer itself may ask (its token's subject must be ``peer_id``).
         */
        post: operations["broker_credentials_api_registry_peers__peer_id__broker_credentials_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/registry/selections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pick `count` usable active peers
         * @description Usable: active (not stale), registered, not disabled, visible to you.
         */
        post: operations["select_api_registry_selections_post"];
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
         * BrokerCredentials
         * @description A peer's own RabbitMQ credentials (a new password on every request).
         */
        BrokerCredentials: {
            /** Password */
            password: string;
            /**
             * Queue
             * @description The only queue this user may consume
             */
            queue: string;
            /**
             * Routing Key Prefix
             * @description Telemetry routing keys must start with it
             */
            routing_key_prefix: string;
            /**
             * Telemetry Exchange
             * @description The only exchange this user may publish to
             */
            telemetry_exchange: string;
            /**
             * Url
             * @description amqp://host:port/vhost, without credentials
             */
            url: string;
            /** Username */
            username: string;
        };
        /**
         * DeviceSpecs
         * @description What a peer machine can do, as its runtime detected it.
         *
         *     ``device`` is what training would run on: ``cuda`` when torch sees a CUDA GPU,
         *     ``mps`` on Apple silicon, else ``cpu`` (also when torch is not installed).
         */
        DeviceSpecs: {
            /** Cpu Cores */
            cpu_cores: number;
            /** Cpu Model */
            cpu_model: string;
            /** Cpu Threads */
            cpu_threads: number;
            /** Cuda Version */
            cuda_version?: string | null;
            /**
             * Device
             * @default cpu
             * @enum {string}
             */
            device: "cpu" | "cuda" | "mps";
            /** Disk Free Gb */
            disk_free_gb: number;
            /**
             * Gpus
             * @default []
             */
            gpus: components["schemas"]["GpuSpecs"][];
            /** Os */
            os: string;
            /** Peertrain Version */
            peertrain_version: string;
            /**
             * Protocol
             * @default 1
             */
            protocol: number;
            /** Python Version */
            python_version: string;
            /** Ram Gb */
            ram_gb: number;
            /** Torch Version */
            torch_version?: string | null;
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
         * GpuSpecs
         * @description One accelerator as torch reports it.
         */
        GpuSpecs: {
            /** Memory Gb */
            memory_gb: number;
            /** Name */
            name: string;
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
        /** Page[PeerPublic] */
        Page_PeerPublic_: {
            /** Items */
            items: components["schemas"]["PeerPublic"][];
            /**
             * Next Offset
             * @description The offset of the next page; null when this is the last
             */
            next_offset: number | null;
        };
        /**
         * PeerPublic
         * @description A peer as callers see it.
         */
        PeerPublic: {
            /** Disabled */
            disabled: boolean;
            /** Enrolled At */
            enrolled_at: string | null;
            /** Heartbeat Interval S */
            heartbeat_interval_s: number | null;
            /** Last Seen */
            last_seen: string | null;
            /** Name */
            name: string;
            /** Owner Id */
            owner_id: string;
            /** Peer Id */
            peer_id: string;
            /**
             * Queue
             * @description The peer's queue ID (null until registered)
             */
            queue: string | null;
            /** Shared */
            shared: boolean;
            specs: components["schemas"]["DeviceSpecs"] | null;
            status: components["schemas"]["Status"];
            /** Updated At */
            updated_at: string | null;
        };
        /**
         * PeerSettingsUpdate
         * @description ``PATCH /peers/{id}``: share the peer with every user, or disable it.
         */
        PeerSettingsUpdate: {
            /** Disabled */
            disabled?: boolean | null;
            /** Shared */
            shared?: boolean | null;
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
         * ReplayResult
         * @description What ``POST /admin/replay`` did.
         */
        ReplayResult: {
            /** Events */
            events: number;
            /** Peers */
            peers: number;
            /** Position */
            position: number;
            /** Took S */
            took_s: number;
        };
        /**
         * SelectedPeer
         * @description One selected peer: where to send its tasks, and what it has.
         */
        SelectedPeer: {
            /** Last Seen */
            last_seen: string | null;
            /** Peer Id */
            peer_id: string;
            /** Queue */
            queue: string;
            specs: components["schemas"]["DeviceSpecs"] | null;
        };
        /**
         * SelectionFilters
         * @description Which peers may be selected (they must be active and usable in any case).
         */
        SelectionFilters: {
            /** Device */
            device?: ("cpu" | "cuda" | "mps") | null;
            /**
             * Min Memory Gb
             * @description Training-device memory: the largest GPU's on cuda peers, else RAM
             */
            min_memory_gb?: number | null;
            /**
             * Owner
             * @default any
             * @enum {string}
             */
            owner: "me" | "any";
        };
        /**
         * SelectionRequest
         * @description ``POST /selections``.
         */
        SelectionRequest: {
            /** Count */
            count: number;
            /**
             * @default {
             *       "owner": "any"
             *     }
             */
            filters: components["schemas"]["SelectionFilters"];
            /**
             * Prefer
             * @default memory
             * @enum {string}
             */
            prefer: "memory" | "gpu" | "random";
            /**
             * Seed
             * @description Makes prefer=random repeatable
             */
            seed?: number | null;
        };
        /**
         * Status
         * @description What the registry says about a peer now.
         * @enum {string}
         */
        Status: "active" | "stale" | "offline";
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    replay_api_registry_admin_replay_post: {
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
                    "application/json": components["schemas"]["ReplayResult"];
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
    list_peers_api_registry_peers_get: {
        parameters: {
            query?: {
                device?: ("cpu" | "cuda" | "mps") | null;
                /** @description Most items in the page */
                limit?: number;
                min_memory_gb?: number | null;
                /** @description Items to skip (a page's next_offset) */
                offset?: number;
                owner?: "me" | "any";
                status?: components["schemas"]["Status"] | null;
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
                    "application/json": components["schemas"]["Page_PeerPublic_"];
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
    get_peer_api_registry_peers__peer_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                peer_id: string;
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
                    "application/json": components["schemas"]["PeerPublic"];
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
            /** @description No such peer (or one you may not see) */
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
    remove_peer_api_registry_peers__peer_id__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                peer_id: string;
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
            /** @description Not the peer's owner (or a peer's token) */
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
    update_peer_api_registry_peers__peer_id__patch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                peer_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PeerSettingsUpdate"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PeerPublic"];
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
            /** @description Not the peer's owner (or a peer's token) */
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
    broker_credentials_api_registry_peers__peer_id__broker_credentials_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                peer_id: string;
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
                    "application/json": components["schemas"]["BrokerCredentials"];
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
            /** @description Not this peer's own token, or the owner's peer quota is used up */
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
            /** @description The service is starting, or RabbitMQ's management API does not answer */
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
    select_api_registry_selections_post: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SelectionRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SelectedPeer"][];
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
            /** @description Fewer than `count` usable active peers match */
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
