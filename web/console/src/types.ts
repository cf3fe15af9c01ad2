// The parts of the API's answers the console reads (see the services' models.py).

export interface JobLine {
  job_id: string;
  name: string;
  state: string;
  dataset_id: string;
  rounds: number;
  current_round: number | null;
  created_at: string | null;
  finished_at: string | null;
  accuracy: number | null;
  loss: number | null;
}
export interface JobSummary extends JobLine {
  peers: number;
}
export interface Task {
  task_id: string;
  round: number;
  attempt: number;
  shard: number;
  peer_id: string;
  state: string;
  device: string | null;
  error: string | null;
  traceback: string | null;
}
export interface JobDetail extends JobLine {
  peers: string[];
  model: Record<string, unknown>;
  training: Record<string, unknown>;
  aggregation: Record<string, unknown>;
  sharding: { strategy?: string; alpha?: number; seed?: number };
  init_from: { job_id: string; version: number } | null;
  init_weights: { weights_id: string } | null;
  round: { round: number; attempt: number; state: string } | null;
  tasks: Task[];
  final_version: number | null;
  config_key: string | null;
  error: string | null;
  error_code: string | null;
  /** The next round attempt, waiting for the job's peers to come online. */
  waiting?: { round: number; attempt: number; online: number; needed: number; since: string; until: string } | null;
}
export interface RoundMetrics {
  round: number;
  loss: number;
  accuracy: number;
  samples: number;
  duration_s: number | null;
  peers: number | null;
}
export interface PeerEpoch {
  peer_id: string;
  round: number;
  shard: number;
  epoch: number;
  epochs: number;
  loss: number | null;
  accuracy: number | null;
  samples: number;
}
export interface JobMetrics {
  job_id: string;
  initial: { loss: number; accuracy: number } | null;
  rounds: RoundMetrics[];
  peers: PeerEpoch[];
}
export interface Peer {
  peer_id: string;
  name: string;
  status: string;
  specs: { device: string; cpu_model: string; cpu_cores: number; ram_gb: number; gpus: Array<{ name: string; memory_gb: number }> } | null;
  last_seen: string | null;
  shared: boolean;
  disabled: boolean;
}
export interface Dataset {
  id: string;
  name: string;
  filename: string;
  status: string;
  error: { code?: string; message?: string } | null;
  size: number;
  kind: string | null;
  rows: number | null;
  columns: number | null;
  schema: Array<Record<string, unknown> & { name: string; type: string; missing?: number }> | null;
  label_column: string | null;
  classes: string[] | null;
  class_counts: number[] | null;
  train_rows: number | null;
  holdout_rows: number | null;
  input_shape: number[] | null;
  created_at: string | null;
}
export interface Preview {
  kind: string;
  columns: string[];
  rows: unknown[][];
}

export const FINISHED = new Set(["completed", "failed", "cancelled"]);
/** `GET /api/jobs/{id}/model` (peertrain.common.specs.ModelSummary). */
export interface LayerSummary {
  name: string;
  op: string;
  module: string | null;
  output: string;
  shape: number[] | null;
  parameters: number;
}
export interface ModelSummary {
  arch: string;
  name: string | null;
  input_shape: number[];
  parameters: number;
  activations: number;
  layers: LayerSummary[];
}
/** One event of a job's lineage (`GET /api/jobs/{id}/events`). */
export interface JobEvent {
  id: string;
  type: string;
  occurred_at: string;
  stream: string;
  seq: number;
  position: number;
  producer: string;
  actor: string | null;
  data: Record<string, unknown>;
}
/** One page of a list. */
export interface Page<T> {
  items: T[];
  next_offset: number | null;
}
