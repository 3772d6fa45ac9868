/**
 * testing/nft-table: a namespace's `ip kube-proxy` table as `nft -j` lists
 * it, normalised for comparing two namespaces programmed two ways (`nft -f`
 * and nodenet's netlink batches): handles dropped, set elements sorted,
 * objects in a stable order (rules keep theirs within a chain).
 */
import type { Runner } from '../exec/runner.js';

export async function normalisedTable(runner: Runner, netnsPath: string): Promise<unknown[]> {
  const r = await runner.run(['nsenter', `--net=${netnsPath}`, '--', 'nft', '-j', 'list', 'table', 'ip', 'kube-proxy']);
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) if (k !== 'handle') o[k] = k === 'elem' && Array.isArray(x) ? x.map(strip).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)) : strip(x);
      return o;
    }
    return v;
  };
  const items = (JSON.parse(r.stdout) as { nftables: Record<string, { chain?: string; name?: string }>[] }).nftables.filter((x) => !('metainfo' in x));
  const order = (x: Record<string, { chain?: string; name?: string }>) => {
    const [kind, body] = Object.entries(x)[0]!;
    return `${kind === 'rule' ? 'chain' : kind} ${body.chain ?? body.name ?? ''} ${kind === 'rule' ? 1 : 0}`;
  };
  return items.map((x) => ({ o: order(x), x: strip(x) })).sort((a, b) => (a.o < b.o ? -1 : a.o > b.o ? 1 : 0)).map((e) => e.x);
}
