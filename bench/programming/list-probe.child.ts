/**
 * bench/programming/list-probe.child: the agent's two initial lists, made
 * again the way it makes them, to split a list into its parts. Run by
 * run.ts inside the node's namespace (nsenter) with the node's kubeconfig:
 *
 *   node --import tsx list-probe.child.ts KUBECONFIG REPEAT
 *
 * For Services and EndpointSlices across all namespaces: node:https to the
 * last byte and JSON.parse (the floor of any client), then client-node's
 * list call (what the agent's informer runs: the same request, then
 * client-node's ObjectSerializer over every item). One warm-up each, then
 * REPEAT rounds; prints one JSON line: ListProbe[] with medians.
 */
import { readFileSync } from 'node:fs';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../agent/src/watch/kube-source.js';
import { ApiClient } from '../lib/http-client.js';
import { parseKubeconfig } from '../lib/kubeconfig.js';
import { median } from '../lib/stats.js';
import type { ListProbe } from './report.js';
import { SERVICES_LIST_PATH, SLICES_LIST_PATH } from './timeline.js';

const [kubeconfigPath, repeatArg] = process.argv.slice(2);
if (!kubeconfigPath || !repeatArg) throw new Error('usage: list-probe.child.ts KUBECONFIG REPEAT');
const repeat = Number(repeatArg);
const kc = loadKubeConfig(kubeconfigPath);
const core = kc.makeApiClient(CoreV1Api);
const discovery = kc.makeApiClient(DiscoveryV1Api);
const raw = new ApiClient(parseKubeconfig(readFileSync(kubeconfigPath, 'utf8')), { maxSockets: 1 });

const kinds: [ListProbe['kind'], string, () => Promise<{ items: unknown[] }>][] = [
  ['Services', SERVICES_LIST_PATH, () => core.listServiceForAllNamespaces()],
  ['EndpointSlices', SLICES_LIST_PATH, () => discovery.listEndpointSliceForAllNamespaces()],
];

const out: ListProbe[] = [];
try {
  for (const [kind, path, list] of kinds) {
    const fetch: number[] = [];
    const parse: number[] = [];
    const client: number[] = [];
    let items = 0;
    let bytes = 0;
    for (let i = 0; i <= repeat; i++) {
      const r = await raw.send('GET', path);
      if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status}`);
      const p0 = performance.now();
      const o = JSON.parse(r.body.toString('utf8')) as { items?: unknown[] };
      const p1 = performance.now();
      const c0 = performance.now();
      const l = await list();
      const c1 = performance.now();
      if (i === 0) continue; // warm-up: TLS connections, the JIT
      fetch.push(r.endAt - r.sentAt);
      parse.push(p1 - p0);
      client.push(c1 - c0);
      items = l.items.length;
      bytes = r.body.length;
      if ((o.items?.length ?? -1) !== items) throw new Error(`${path}: node:https saw ${o.items?.length} items, client-node ${items}`);
    }
    out.push({ kind, items, bytes, fetchMs: median(fetch), parseMs: median(parse), clientNodeMs: median(client) });
  }
} finally {
  raw.close();
}
// client-node keeps its connections open: exit once the line is out.
process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(0));
