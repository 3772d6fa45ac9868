/**
 * netfilter/ipvsadm-parse: the text forms of `ipvsadm`. Pure.
 *
 * - renderIpvsadmRestore: a batch of ops → `ipvsadm -R` input, one line per
 *   op in ipvsadm's own option syntax (what `ipvsadm -S -n` prints, plus
 *   the edit and delete commands -E, -e, -D, -d): one spawn per sync, never
 *   one per virtual server.
 * - parseIpvsadmList: `ipvsadm -Ln` output → virtual servers with their real
 *   servers and connection counters (ActiveConn, InActConn), which graceful
 *   termination needs and `ipvsadm -S` does not print.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { ForwardMethod, IpvsOp, IpvsProtocol, RealServer, RealServerState, VirtualServer, VirtualServerState } from './ipvs-types.js';

const PROTO_FLAG: Readonly<Record<IpvsProtocol, string>> = { TCP: '-t', UDP: '-u', SCTP: '--sctp-service' };
const FWD_FLAG: Readonly<Record<ForwardMethod, string>> = { masq: '-m', route: '-g', local: '-g', tunnel: '-i' };

function svcArgs(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): string {
  return `${PROTO_FLAG[vs.protocol]} ${vs.address}:${vs.port}`;
}

function schedArgs(vs: VirtualServer): string {
  return `-s ${vs.scheduler}${vs.persistentTimeout > 0 ? ` -p ${vs.persistentTimeout}` : ''}`;
}

function destArgs(rs: RealServer): string {
  return `-r ${rs.address}:${rs.port} ${FWD_FLAG[rs.forward]} -w ${rs.weight}`;
}

/** One `ipvsadm -R` line per op, in order; ends with a newline (empty for no ops). */
export function renderIpvsadmRestore(ops: readonly IpvsOp[]): string {
  const lines = ops.map((o) => {
    switch (o.op) {
      case 'add-service': return `-A ${svcArgs(o.vs)} ${schedArgs(o.vs)}`;
      case 'edit-service': return `-E ${svcArgs(o.vs)} ${schedArgs(o.vs)}`;
      case 'del-service': return `-D ${svcArgs(o.vs)}`;
      case 'add-dest': return `-a ${svcArgs(o.vs)} ${destArgs(o.rs)}`;
      case 'edit-dest': return `-e ${svcArgs(o.vs)} ${destArgs(o.rs)}`;
      case 'del-dest': return `-d ${svcArgs(o.vs)} -r ${o.rs.address}:${o.rs.port}`;
    }
  });
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** The argv that lists one service (`ipvsadm -Ln -t 10.96.0.10:80`). */
export function listOneArgs(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): string[] {
  return ['-L', '-n', PROTO_FLAG[vs.protocol], `${vs.address}:${vs.port}`];
}

const FWD_NAME: Readonly<Record<string, ForwardMethod>> = { Masq: 'masq', Local: 'local', Tunnel: 'tunnel', Route: 'route' };
const ADDR_PORT = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/;

/**
 * Parses `ipvsadm -Ln` (or `-Ln -t ADDR:PORT`). Firewall-mark and IPv6
 * services are skipped, as are their real servers. Throws
 * NodenetError(Internal) on a line it cannot read.
 */
export function parseIpvsadmList(text: string): VirtualServerState[] {
  const out: { vs: VirtualServer; dests: RealServerState[] }[] = [];
  let cur: { vs: VirtualServer; dests: RealServerState[] } | null = null;
  let skipping = false;
  const bad = (n: number, line: string, why: string): NodenetError =>
    new NodenetError(ErrorCode.Internal, `ipvsadm -Ln line ${n}: ${why}: ${JSON.stringify(line)}`);
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    if (line === '' || line.startsWith('IP Virtual Server') || line.startsWith('Prot ') || /^\s+->\s+RemoteAddress/.test(line)) return;
    const words = line.trim().split(/\s+/);
    if (words[0] === '->') {
      if (skipping) return;
      if (!cur) throw bad(i + 1, line, 'a real server before any service');
      const m = ADDR_PORT.exec(words[1] ?? '');
      const fwd = FWD_NAME[words[2] ?? ''];
      const [w, a, ia] = [words[3], words[4], words[5]].map(Number);
      if (!m || !fwd || ![w, a, ia].every((x) => Number.isInteger(x))) throw bad(i + 1, line, 'not a real server line');
      cur.dests.push({ address: m[1]!, port: Number(m[2]), forward: fwd, weight: w!, activeConns: a!, inactiveConns: ia! });
      return;
    }
    const proto = words[0];
    if (proto === 'FWM' || (proto !== undefined && /^(TCP|UDP|SCTP)$/.test(proto) && (words[1] ?? '').startsWith('['))) {
      skipping = true; // firewall mark or IPv6: not ours
      cur = null;
      return;
    }
    if (proto !== 'TCP' && proto !== 'UDP' && proto !== 'SCTP') throw bad(i + 1, line, 'not a service line');
    const m = ADDR_PORT.exec(words[1] ?? '');
    const scheduler = words[2];
    if (!m || !scheduler) throw bad(i + 1, line, 'not a service line');
    const p = words.indexOf('persistent');
    const timeout = p >= 0 ? Number(words[p + 1]) : 0;
    if (!Number.isInteger(timeout)) throw bad(i + 1, line, 'bad persistence timeout');
    skipping = false;
    cur = { vs: { protocol: proto, address: m[1]!, port: Number(m[2]), scheduler, persistentTimeout: timeout }, dests: [] };
    out.push(cur);
  });
  return out.map(({ vs, dests }) => ({ ...vs, dests }));
}

/** True when ipvsadm's stderr says the kernel has no IPVS ("Protocol not available", exit 2 here). */
export function ipvsadmSaysNoIpvs(stderr: string): boolean {
  return /Protocol not available|Can't initialize ipvs|built in the kernel or as module/i.test(stderr);
}

/** True when ipvsadm's stderr says the service asked for does not exist. */
export function ipvsadmSaysNoService(stderr: string): boolean {
  return /No such service/i.test(stderr);
}
