/**
 * A full sync through netlink is rendered straight into the batch
 * (RenderSink): the per-service chains and rules as nf_tables commands the
 * render builds itself, never as text. Those must be exactly what the
 * parser, proven byte for byte against nft 1.0.6 (nft/netlink/encode.test.ts),
 * reads from the line the text render writes in their place, and at the
 * same place: checked here line by line for full and partial renders of
 * Services with every construct the render writes, and as batch bytes.
 */
import t, { type Test } from 'tap';
import { parseCidr } from '../../../../lib/net/ip.js';
import { parseOneLine, parsePartialScript, type NlCommand } from '../../netfilter/nft/netlink/commands.js';
import { encodeBatch } from '../../netfilter/nft/netlink/encode.js';
import { ep, nodeConfig, snapshot, svc } from '../test-fixtures.js';
import type { ProxyNodeConfig, ProxySnapshot, SyncScope } from '../types.js';
import { EMPTY_APPLIED, renderNftables, type NftablesApplied, type NftablesRenderOptions } from './render.js';

const SNAP = snapshot(
  [svc('ns1', 'np', '10.96.0.11', { nodePort: 30011, affinity: 60 }), [ep('10.244.2.1:80'), ep('10.244.1.2:80', { local: true }), ep('10.244.1.3:8080')]],
  [svc('ns2', 'lb', '10.96.0.13', { lbVIPs: ['192.168.99.13'], sourceRanges: ['203.0.113.0/24'], nodePort: 30013, etp: 'Local' }), [ep('10.244.2.5:80'), ep('10.244.1.5:80', { local: true })]],
  [svc('ns2', 'itp', '10.96.0.15', { itp: 'Local', externalIPs: ['192.168.5.6'] }), [ep('10.244.1.7:80', { local: true }), ep('10.244.2.7:80')]],
  [svc('ns2', 'empty', '10.96.0.14', { nodePort: 30014, externalIPs: ['192.168.5.5'] }), []],
  [svc('ns2', 'dns', '10.96.0.10', { port: 53, protocol: 'UDP', portName: 'dns' }), [ep('10.244.2.6:53')]],
  [svc('ns3', 'sctp', '10.96.0.16', { port: 9999, protocol: 'SCTP', portName: 'x' }), [ep('10.244.2.8:9999')]],
);

function check(t: Test, what: string, snap: ProxySnapshot, cfg: ProxyNodeConfig, scope: SyncScope, existing?: NftablesApplied, opts: NftablesRenderOptions = {}): void {
  const got: (string | NlCommand)[] = [];
  const streamed = renderNftables(snap, cfg, scope, existing, opts, { text: (l) => got.push(l), command: (c) => got.push(c) });
  const text = renderNftables(snap, cfg, scope, existing, opts);
  const want = text.text.replace(/\n$/, '').split('\n');
  t.equal(streamed.text, '', `${what}: no text is built`);
  t.equal(got.length, want.length, `${what}: the same number of lines (${want.length})`);
  t.equal(streamed.lines, want.length, `${what}: counted`);
  t.same(streamed.applied, text.applied, `${what}: the same record`);
  t.same([streamed.ruleCount, streamed.elementCount, streamed.chainsWritten], [text.ruleCount, text.elementCount, text.chainsWritten], `${what}: the same counts`);
  let built = 0;
  let bad = 0;
  const mixed: NlCommand[] = [];
  got.forEach((g, i) => {
    if (typeof g === 'string') {
      if (g !== want[i]) bad++;
      const p = parseOneLine(i + 1, g);
      if (p.ok && p.cmd) mixed.push(p.cmd);
      return;
    }
    built++;
    const p = parseOneLine(i + 1, want[i]!);
    if (!p.ok || !p.cmd) return void t.fail(`${what}: line ${i + 1} of the text does not parse: ${want[i]}`);
    const cmd = { ...g, line: i + 1 };
    // Compared field by field, so that a failure names the line.
    if (JSON.stringify(cmd, (_, v) => (v instanceof Uint8Array ? [...v] : v)) !== JSON.stringify(p.cmd, (_, v) => (v instanceof Uint8Array ? [...v] : v))) {
      t.fail(`${what}: line ${i + 1}: built ${JSON.stringify(g)} but the text "${want[i]}" parses otherwise`);
    }
    mixed.push(cmd);
  });
  t.equal(bad, 0, `${what}: the text lines are the text render's`);
  t.ok(built > 0, `${what}: ${built} of ${got.length} lines came as commands`);
  const parsed = parsePartialScript(text.text);
  if (!parsed.ok) return void t.fail(`${what}: ${parsed.reason}`);
  t.ok(encodeBatch(mixed, 7).bytes.equals(encodeBatch(parsed.commands, 7).bytes), `${what}: the same batch, byte for byte`);
}

t.test('full renders into a sink: the built commands are the parsed ones', async (t) => {
  for (const cfg of [nodeConfig(), nodeConfig({ clusterCIDR: null }), nodeConfig({ serviceCIDRs: [parseCidr('10.96.0.0/16').cidr] })]) {
    check(t, `full, clusterCIDR ${cfg.clusterCIDR}`, SNAP, cfg, { full: true });
  }
});

t.test('over an existing record (stale chains and sets deleted), and partial renders', async (t) => {
  const cfg = nodeConfig();
  const first = renderNftables(SNAP, cfg, { full: true });
  const changed = snapshot(
    [svc('ns1', 'np', '10.96.0.11', { nodePort: 30011, affinity: 60 }), [ep('10.244.2.1:80'), ep('10.244.2.9:80')]],
    [svc('ns2', 'lb', '10.96.0.13', { lbVIPs: ['192.168.99.13'], sourceRanges: ['203.0.113.0/24'], nodePort: 30013, etp: 'Local' }), [ep('10.244.2.5:80')]],
    [svc('ns2', 'dns', '10.96.0.10', { port: 53, protocol: 'UDP', portName: 'dns' }), [ep('10.244.2.6:53')]],
  );
  check(t, 'full over a record', changed, cfg, { full: true }, first.applied);
  check(t, 'partial', changed, cfg, { full: false, changed: new Set(['ns1/np', 'ns2/lb', 'ns2/itp', 'ns2/empty', 'ns3/sctp']) }, first.applied);
});

t.test('the sharded layout: every line, full, over a record, partial and a reset of another layout, goes to the kernel as the parser reads it', async (t) => {
  const cfg = nodeConfig();
  const opts = { shards: 4 };
  check(t, 'sharded full', SNAP, cfg, { full: true }, undefined, opts);
  const first = renderNftables(SNAP, cfg, { full: true }, undefined, opts);
  const changed = snapshot([svc('ns1', 'np', '10.96.0.11', { nodePort: 30011, affinity: 60 }), [ep('10.244.2.1:80'), ep('10.244.2.9:80')]]);
  check(t, 'sharded full over a record', changed, cfg, { full: true }, first.applied, opts);
  check(t, 'sharded partial', changed, cfg, { full: false, changed: new Set(['ns1/np', 'ns2/lb', 'ns2/itp', 'ns2/empty', 'ns2/dns', 'ns3/sctp']) }, first.applied, opts);
  check(t, 'sharded over tables of another layout', SNAP, cfg, { full: true }, { ...EMPTY_APPLIED, resetTables: ['kube-proxy', 'kube-proxy-5'] }, opts);
  const tables = new Set([...first.text.matchAll(/^add table ip (\S+)/gm)].map((m) => m[1]));
  t.same([...tables], ['kube-proxy', 'kube-proxy-0', 'kube-proxy-1', 'kube-proxy-2', 'kube-proxy-3'], 'the main table and 4 shard tables');
  const reset = renderNftables(SNAP, cfg, { full: true }, { ...EMPTY_APPLIED, resetTables: ['kube-proxy', 'kube-proxy-5'] }, opts).text;
  t.match(reset, /^add table ip kube-proxy\ndelete table ip kube-proxy\nadd table ip kube-proxy-5\ndelete table ip kube-proxy-5\n/m, 'tables of another layout are deleted first, in the same transaction');
});
