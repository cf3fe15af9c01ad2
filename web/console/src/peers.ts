// Peers the user may see: status, device, last seen.
import { all } from "./api";
import { cmd, h, stateEl, table, when } from "./dom";
import { Peer } from "./types";
import type { View } from "./view";

const device = (p: Peer): string => {
  const s = p.specs;
  if (!s) return "–";
  const gpus = s.gpus.map((g) => `${g.name} (${g.memory_gb.toFixed(0)} GB)`).join(", ");
  return `${s.device} · ${s.cpu_cores} cores · ${s.ram_gb.toFixed(1)} GB RAM${gpus ? " · " + gpus : ""}`;
};

export const peersView: View = async (root, _params, alive) => {
  const tick = async (): Promise<void> => {
    const peers = await all<Peer>("/api/registry/peers");
    if (!alive()) return;
    root.replaceChildren(
      h("h1", {}, "Peers"),
      peers.length
        ? table(
            ["name", "id", "status", "device", "last seen", ""],
            peers.map((p) => [
              p.name,
              h("code", {}, p.peer_id),
              stateEl(p.status),
              device(p),
              when(p.last_seen),
              [p.shared ? "shared" : "", p.disabled ? "disabled" : ""].filter(Boolean).join(", "),
            ]),
            { "data-testid": "peers" },
          )
        : h(
            "p",
            { class: "muted", "data-testid": "peers-empty" },
            "No peers yet: ",
            cmd("peertrain peers enroll-token"),
            " prints a token; on the peer's machine, ",
            cmd(`peertrain-peer enroll --api ${location.origin} --token <token>`),
            " then ",
            cmd("peertrain-peer run"),
            ".",
          ),
    );
  };
  await tick();
  return tick;
};
