/**
 * bench/lib/report: the number formats and the Markdown tables the benches'
 * reports share. Pure.
 *
 * A ratio "N× inside" is reference / nodenet: how many times over nodenet
 * would have to slow down to reach the reference.
 */

/** 1234567 → "1,234,567" (rounded; sign kept, no "-0"). */
export function thousands(n: number): string {
  const s = Math.round(Math.abs(n)).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return n < 0 && Math.round(Math.abs(n)) !== 0 ? `-${s}` : s;
}

/** Milliseconds: two decimals below 1, one below 10, whole numbers with separators above; "–" for none. */
export function ms(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const a = Math.abs(n);
  if (a < 1) return n.toFixed(2);
  if (a < 10) return n.toFixed(1);
  return thousands(n);
}

/** Bytes as MiB with one decimal. */
export function mib(bytes: number): string {
  return (bytes / 1048576).toFixed(1);
}

/** "310× inside" when nodenet's figure is below the reference, "2.5× over" when above; "–" without both. */
export function ratio(reference: number, ours: number): string {
  if (!Number.isFinite(ours) || !Number.isFinite(reference) || ours <= 0 || reference <= 0) return '–';
  const r = reference / ours;
  const f = (x: number) => (x >= 100 ? thousands(x) : x >= 10 ? x.toFixed(0) : x.toFixed(1));
  return r >= 1 ? `${f(r)}× inside` : `${f(1 / r)}× over`;
}

/** A Markdown table: the first `left` columns left-aligned (names, labels), the figures right-aligned. */
export function table(head: readonly string[], rows: readonly (readonly string[])[], left = 1): string {
  return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < left ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** One published reference beside nodenet's figure. */
export interface ReferenceRow {
  readonly reference: string;
  readonly theirs: string;
  readonly ours: string;
  readonly ratio: string;
}

export function formatReferences(rows: readonly ReferenceRow[]): string {
  return table(['reference', 'theirs', 'nodenet', 'ratio'], rows.map((r) => [r.reference, r.theirs, r.ours, r.ratio]));
}
