/**
 * ipam/range-set: an ordered list of non-overlapping Ranges from which one
 * address is allocated per ADD (host-local's RangeSet). Pure.
 */
import { ipamInvalid } from './ipam-errors.js';
import { parseRange, rangeContains, rangesOverlap, rangeToString, type Range, type RangeDefaults } from './range.js';

export type RangeSet = readonly Range[];

/** Parse the range set found at `field` (e.g. "ipam.ranges[1]"): a non-empty array of range objects, no overlaps. */
export function parseRangeSet(raw: unknown, field: string, defaults: RangeDefaults = {}): RangeSet {
  if (!Array.isArray(raw)) throw ipamInvalid(field, 'must be an array of ranges');
  if (raw.length === 0) throw ipamInvalid(field, 'is an empty range set');
  const set = raw.map((r: unknown, i) => parseRange(r, `${field}[${i}]`, defaults));
  for (let i = 0; i < set.length; i++) {
    for (let j = i + 1; j < set.length; j++) {
      if (rangesOverlap(set[i]!, set[j]!)) {
        throw ipamInvalid(`${field}[${j}]`, `range ${rangeToString(set[j]!)} overlaps ${field}[${i}] (${rangeToString(set[i]!)})`);
      }
    }
  }
  return set;
}

/** The range of the set containing ip, or undefined. */
export function rangeFor(set: RangeSet, ip: string): Range | undefined {
  return set.find((r) => rangeContains(r, ip));
}

export function rangeSetsOverlap(a: RangeSet, b: RangeSet): boolean {
  return a.some((x) => b.some((y) => rangesOverlap(x, y)));
}

export function rangeSetToString(set: RangeSet): string {
  return set.map(rangeToString).join(',');
}
