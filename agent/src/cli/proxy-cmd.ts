/**
 * `nodenet proxy status | cleanup`: what a node's proxy applied, and removing
 * its rules.
 *
 * status reads `<runDir>/proxy-status.json`, which the agent rewrites after
 * every sync and every manifest scan (the kernel stays the source of truth:
 * `nodenet trace` reads the live rules). cleanup is kube-proxy's --cleanup:
 * it removes both modes' rules of one prefix from a namespace, for a node
 * that stops running the proxy or switches modes by hand. The agent itself
 * removes the other mode's rules when it starts.
 */
import { stringify as toYaml } from 'yaml';
import { toNetnsPath } from '../netns/netns.js';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../node/proxy-status.js';
import { CommandError } from './errors.js';
import { FlagError, OUTPUT_FLAGS, outputFormat, parseFlags, type FlagSpecs } from './flags.js';
import { netnsFlag, prefixFlag } from './node-flags.js';
import { formatTable } from './table.js';

export interface ProxyCmdDeps {
  /** Removes one mode's rules from a namespace; true when there were any (compose's removeProxyRules). */
  readonly removeRules: (o: { netns?: string; prefix: string }, mode: 'iptables' | 'nftables') => Promise<boolean>;
  readonly stdout: (s: string) => void;
  /** Throws unless a network namespace file exists at path. */
  readonly checkNetns?: (path: string) => void;
}

export const PROXY_USAGE = `usage: nodenet proxy status [--run-dir D] [-o json|yaml]
       nodenet proxy cleanup [--netns NAME|PATH] [--prefix KUBE]
status: what the node's proxy applied (Services and endpoints, last sync, rejected objects).
cleanup: remove both proxy modes' rules from a namespace (kube-proxy --cleanup).`;

/** Formats a status file for people: one line per Service port, then the last sync and any problems. */
export function formatProxyStatus(st: ProxyStatus): string {
  const lines: string[] = [];
  const ls = st.lastSync;
  lines.push(`mode ${st.mode}, ${st.ready ? 'ready' : 'not synced yet'}, ${st.syncs} sync${st.syncs === 1 ? '' : 's'}`);
  if (ls) {
    lines.push(
      `last sync: ${ls.ok ? 'ok' : `FAILED (${ls.error})`}, ${ls.scope} (${ls.reason}), ${ls.durationMs} ms, ${ls.servicePorts} service ports, ${ls.endpoints} endpoints` +
        (ls.ruleCount !== null ? `, ${ls.ruleCount} rules written` : ''),
    );
  }
  const names = Object.keys(st.applied).sort();
  if (names.length) {
    const rows = names.map((n) => {
      const eps = st.applied[n] ?? [];
      return [n, eps.length ? eps.join(', ') : '<none: refused>'];
    });
    lines.push('', formatTable(['SERVICE PORT', 'ENDPOINTS'], rows).trimEnd());
  }
  if (st.rejected.length) {
    lines.push('', 'rejected objects (no rules until fixed):');
    for (const r of st.rejected) lines.push(`  ${r.kind} ${r.key}: ${r.field}: ${r.message}`);
  }
  if (st.ignored.length) {
    lines.push('', 'ignored objects:');
    for (const r of st.ignored) lines.push(`  ${r.kind} ${r.key}: ${r.reason}`);
  }
  const bad = Object.entries(st.manifestErrors);
  if (bad.length) {
    lines.push('', 'unreadable manifest files (their previous objects are kept):');
    for (const [f, msg] of bad) lines.push(`  ${f}: ${msg}`);
  }
  return `${lines.join('\n')}\n`;
}

const SPECS: Readonly<Record<string, FlagSpecs>> = {
  status: { 'run-dir': { type: 'string' }, ...OUTPUT_FLAGS },
  cleanup: { netns: { type: 'string' }, prefix: { type: 'string' } },
};

export async function proxyCommand(argv: readonly string[], deps: ProxyCmdDeps): Promise<number> {
  const out = deps.stdout;
  const [sub, ...tail] = argv;
  if (sub === undefined || sub === '-h' || sub === '--help') {
    out(`${PROXY_USAGE}\n`);
    return sub === undefined ? 2 : 0;
  }
  const spec = SPECS[sub];
  if (!spec) throw new FlagError(`unknown proxy subcommand ${JSON.stringify(sub)}\n${PROXY_USAGE}`);
  const p = parseFlags(tail, spec);
  if (p.help) {
    out(`${PROXY_USAGE}\n`);
    return 0;
  }
  const extra = [...p.positional, ...p.rest];
  if (extra.length) throw new FlagError(`unexpected argument ${JSON.stringify(extra[0])}`);
  if (sub === 'status') {
    const fmt = outputFormat(p, ['table', 'json', 'yaml'] as const, 'table');
    const file = proxyStatusFile(p.flags.get('run-dir') ?? '/run/nodenet');
    const st = readProxyStatus(file);
    if (!st) throw new CommandError(`no ${file}: is the agent running with a proxy mode (and this --run-dir)?`);
    out(fmt === 'json' ? `${JSON.stringify(st, null, 2)}\n` : fmt === 'yaml' ? toYaml(st) : formatProxyStatus(st));
    return 0;
  }
  const ns = netnsFlag(p, deps.checkNetns ?? ((path: string) => void toNetnsPath(path)));
  const netns = ns?.path;
  const prefix = prefixFlag(p);
  const where = ns?.name ?? 'this network namespace';
  for (const mode of ['iptables', 'nftables'] as const) {
    const removed = await deps.removeRules({ prefix, ...(netns ? { netns } : {}) }, mode);
    out(`${mode}: ${removed ? 'rules removed' : 'nothing to remove'} (${where}, prefix ${prefix})\n`);
  }
  return 0;
}
