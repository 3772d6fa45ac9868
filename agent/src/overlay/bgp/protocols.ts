/**
 * overlay/bgp/protocols: `birdc show protocols` read into rows, and the BGP
 * sessions among them (pure). BIRD prints a fixed header and one row per
 * protocol:
 *
 *   BIRD 2.0.12 ready.
 *   Name       Proto      Table      State  Since         Info
 *   peer_192_168_77_12 BGP        ---        up     2026-12-05 21:04:49  Established
 *
 * The Since column is one word or two (`timeformat protocol iso long`, as
 * config.ts writes it: date and time); Info is the rest: for BGP the
 * session's state (Idle, Connect, Active, OpenSent, OpenConfirm,
 * Established, Passive) and then its last error, if any.
 */
import { protocolPeerIP } from './config.js';

export interface BirdProtocol {
  readonly name: string;
  readonly proto: string;
  readonly table: string;
  /** BIRD's protocol state: up, start, down, flush... */
  readonly state: string;
  readonly since: string;
  readonly info: string;
}

export interface PeerSession {
  readonly protocol: string;
  readonly peerIP: string;
  /** The BGP state: Established when routes flow, else where the session is stuck. */
  readonly state: string;
  readonly established: boolean;
  readonly since: string;
  /** The rest of BIRD's info: the last error ('Socket: Connection refused'), '' when none. */
  readonly detail: string;
}

const ROW = /^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?|\S+)(?:\s+(.*?))?\s*$/;

/** The rows of `birdc show protocols` output (the banner and the header skipped). @throws on a row it cannot read */
export function parseProtocols(text: string): BirdProtocol[] {
  const out: BirdProtocol[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (!line.trim() || /^BIRD .* ready\.$/.test(line) || /^Name\s+Proto\s+Table\s+State\s+Since/.test(line)) continue;
    const m = ROW.exec(line);
    if (!m) throw new Error(`birdc show protocols: cannot read ${JSON.stringify(line)}`);
    out.push({ name: m[1]!, proto: m[2]!, table: m[3]!, state: m[4]!, since: m[5]!, info: m[6] ?? '' });
  }
  return out;
}

/** The BGP sessions among the rows, by peer IP (protocols config.ts named). */
export function peerSessions(rows: readonly BirdProtocol[]): PeerSession[] {
  const out: PeerSession[] = [];
  for (const r of rows) {
    if (r.proto !== 'BGP') continue;
    const ip = protocolPeerIP(r.name);
    if (!ip) continue;
    const [first = '', ...rest] = r.info.split(/\s+/).filter(Boolean);
    // A protocol BIRD stopped (down) says no BGP state: its state is its own.
    const state = first || (r.state === 'down' ? 'Down' : r.state);
    out.push({ protocol: r.name, peerIP: ip, state, established: state === 'Established', since: r.since, detail: rest.join(' ') });
  }
  return out;
}
