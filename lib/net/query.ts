/**
 * net/query: URL query parameters read the way kube-apiserver (and the
 * kubelet) convert them into ListOptions, DeleteOptions, PodLogOptions and
 * the rest: apimachinery's `runtime/conversion.go`, which the generated
 * `Convert_url_Values_To_*` functions call for every field. Every reader of
 * a query parameter in nodenet goes through here, so one parameter never
 * means two things in two places.
 *
 * - Only the first value of a repeated parameter counts (string, bool,
 *   integer); a list (`dryRun`) takes every value.
 * - bool: absent, `false` or `0` (any case) is false; anything else is
 *   true, the empty string included (`?watch`, `?watch=True` as the Python
 *   client sends it, `?watch=yes`).
 * - int64 (`limit`) and *int64 (`timeoutSeconds`, `gracePeriodSeconds`,
 *   `tailLines`, ...): Go's strconv.ParseInt(s, 10, 64): an optional sign,
 *   decimal digits, within the int64 range. Anything else is a 400 with
 *   strconv's words, as kube-apiserver answers it.
 * - *bool and *int64 keep "absent" apart from false and 0.
 *
 * Pure.
 */
import { ErrorCode, NodenetError } from '../errors/errors.js';

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

function parseInt64(v: string): bigint {
  if (!/^[+-]?\d+$/.test(v)) throw new NodenetError(ErrorCode.BadRequest, `strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  const n = BigInt(v);
  if (n > INT64_MAX || n < INT64_MIN) throw new NodenetError(ErrorCode.BadRequest, `strconv.ParseInt: parsing ${JSON.stringify(v)}: value out of range`);
  return n;
}

/** A request's query parameters, read as apimachinery converts them. */
export class Query {
  constructor(private readonly params: URLSearchParams) {}

  static of(url: URL): Query {
    return new Query(url.searchParams);
  }

  has(name: string): boolean {
    return this.params.has(name);
  }

  /** string and *string: the first value; undefined when absent. */
  string(name: string): string | undefined {
    return this.params.get(name) ?? undefined;
  }

  /** []string: every value, in order. */
  strings(name: string): string[] {
    return this.params.getAll(name);
  }

  /** bool: false when absent, `false` or `0` (any case); true otherwise, the empty string included. */
  bool(name: string): boolean {
    return this.optionalBool(name) ?? false;
  }

  /** *bool: undefined when absent, else as bool. */
  optionalBool(name: string): boolean | undefined {
    const v = this.params.get(name);
    if (v === null) return undefined;
    const l = v.toLowerCase();
    return !(l === 'false' || l === '0');
  }

  /**
   * int64 and *int64: undefined when absent. A number, exact up to 2^53: larger values (still int64) are refused,
   * since nothing nodenet counts gets near them.
   * @throws BadRequest with strconv's words, or naming the parameter when it is beyond 2^53
   */
  int64(name: string): number | undefined {
    const v = this.params.get(name);
    if (v === null) return undefined;
    const n = parseInt64(v);
    if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new NodenetError(ErrorCode.BadRequest, `${name}: Invalid value: ${v}: beyond what nodenet can count (2^53)`);
    }
    return Number(n);
  }
}
