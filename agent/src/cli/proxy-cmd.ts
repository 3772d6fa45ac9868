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
import type { Runner } from '../exec/runner.js';
import { toNetnsPath } from '../netns/netns.js';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../proxy-host.js';
import { FlagError, only, parseFlags } from './flags.js';
import { netnsFlag, prefixFlag } from './node-flags.js';

export interface ProxyCmdDeps {
  readonly runner: Runner;
  /** Removes one mode's rules; true when there were any (proxy-host's removeProxyRules). */
  readonly removeRules: (o: { runner: Runner; netns?: string; prefix: string }, mode: 'iptables' | 'nftables') => Promise<boolean>;
  readonly stdout?: (s: string) => void;
}

export const PROXY_USAGE = `usage: nodenet proxy status [--run-dir D] [--json]
       nodenet proxy cleanup [--netns NAME|PATH] [--prefix KUBE]`;

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
    lines.push('', 'SERVICE PORT'.padEnd(32) + 'ENDPOINTS');
    for (const n of names) {
      const eps = st.applied[n] ?? [];
      lines.push(n.padEnd(32) + (eps.length ? eps.join(', ') : '(none: refused)'));
    }
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

export async function proxyCommand(argv: readonly string[], deps: ProxyCmdDeps): Promise<number> {
  const out = deps.stdout ?? ((s: string) => void process.stdout.write(s));
  const p = parseFlags(argv, ['json']);
  const [sub, ...extra] = p.positional;
  if (extra.length) throw new FlagError(`unexpected argument ${JSON.stringify(extra[0])}`);
  switch (sub) {
    case 'status': {
      only(p, ['run-dir', 'json']);
      const file = proxyStatusFile(p.flags.get('run-dir') ?? '/run/nodenet');
      const st = readProxyStatus(file);
      if (!st) {
        process.stderr.write(`nodenet proxy status: no ${file}: is the agent running with a proxy mode (and this --run-dir)?\n`);
        return 1;
      }
      out(p.flags.has('json') ? `${JSON.stringify(st, null, 2)}\n` : formatProxyStatus(st));
      return 0;
    }
    case 'cleanup': {
      only(p, ['netns', 'prefix']);
      const ns = netnsFlag(p, toNetnsPath);
      const netns = ns?.path;
      const prefix = prefixFlag(p);
      const where = ns?.name ?? 'this network namespace';
      for (const mode of ['iptables', 'nftables'] as const) {
        const removed = await deps.removeRules({ runner: deps.runner, prefix, ...(netns ? { netns } : {}) }, mode);
        out(`${mode}: ${removed ? 'rules removed' : 'nothing to remove'} (${where}, prefix ${prefix})\n`);
      }
      return 0;
    }
    default:
      throw new FlagError(sub === undefined ? `proxy needs a subcommand\n${PROXY_USAGE}` : `unknown proxy subcommand ${JSON.stringify(sub)}\n${PROXY_USAGE}`);
  }
}
