/**
 * controlplane/api/errors: API errors in kube-apiserver's words, and the
 * `metav1.Status` each becomes. The HTTP status and the reason come from the
 * error registry (errors/errors.ts); this module adds the messages
 * (`services "web" not found`) and the details kubectl prints, such as the
 * field causes of a 422.
 */
import { ErrorCode, NodenetError, type StatusReason } from '../../lib/errors/errors.js';

/** One invalid field, as k8s.io/apimachinery's field.Error. */
export interface FieldError {
  /** FieldValueRequired, FieldValueInvalid, ... */
  readonly reason: string;
  /** `spec.ports[0].port` */
  readonly field: string;
  /** The whole message, `Invalid value: 70000: must be between 1 and 65535, inclusive`. */
  readonly message: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { reason: string; message: string; field?: string }[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Success' | 'Failure';
  message: string;
  reason: StatusReason | '';
  details?: StatusDetails;
  code: number;
}

export class ApiError extends NodenetError {
  override name = 'ApiError';
  constructor(code: ErrorCode, message: string, readonly statusDetails?: StatusDetails) {
    super(code, message);
  }
}

/** What a kind is called in messages: `services` or `deployments.apps` (a GroupResource's String()). */
export interface Named {
  readonly resource: string;
  readonly group: string;
  readonly kind: string;
}
const grText = (r: Named) => (r.group ? `${r.resource}.${r.group}` : r.resource);
const details = (r: Named, name: string): StatusDetails => ({ name, group: r.group, kind: r.resource });

export const apiErrors = {
  notFound: (r: Named, name: string) => new ApiError(ErrorCode.NotFound, `${grText(r)} "${name}" not found`, details(r, name)),
  alreadyExists: (r: Named, name: string) => new ApiError(ErrorCode.AlreadyExists, `${grText(r)} "${name}" already exists`, details(r, name)),
  conflict: (r: Named, name: string, why = 'the object has been modified; please apply your changes to the latest version and try again') =>
    new ApiError(ErrorCode.Conflict, `Operation cannot be fulfilled on ${grText(r)} "${name}": ${why}`, details(r, name)),
  invalid: (r: Named, name: string, errs: readonly FieldError[]) => {
    const list = errs.map((e) => `${e.field}: ${e.message}`);
    const msg = `${r.kind} "${name}" is invalid: ${list.length === 1 ? list[0] : `[${list.join(', ')}]`}`;
    return new ApiError(ErrorCode.InvalidObject, msg, { name, group: r.group, kind: r.kind, causes: errs.map((e) => ({ reason: e.reason, message: e.message, field: e.field })) });
  },
  badRequest: (msg: string) => new ApiError(ErrorCode.BadRequest, msg),
  expired: (msg: string) => new ApiError(ErrorCode.Expired, msg),
  unauthorized: () => new ApiError(ErrorCode.Unauthorized, 'Unauthorized'),
  /** The authorization filter's 403, in its words; `reason` (the authorizers' why, when they gave one) follows a colon. */
  forbidden: (user: string, verb: string, r: Named, namespace: string, name?: string, subresource?: string, reason?: string) =>
    new ApiError(
      ErrorCode.Forbidden,
      `${grText(r)}${name ? ` "${name}"` : ''} is forbidden: User "${user}" cannot ${verb} resource "${r.resource}${subresource ? `/${subresource}` : ''}" in API group "${r.group}"${namespace ? ` in the namespace "${namespace}"` : ' at the cluster scope'}${reason ? `: ${reason}` : ''}`,
      name ? details(r, name) : { group: r.group, kind: r.resource },
    ),
  /** errors.NewForbidden(gr, name, why): a 403 for a reason other than authorization (escalation, admission). */
  forbiddenWhy: (r: Named, name: string, why: string) =>
    new ApiError(ErrorCode.Forbidden, `${grText(r)}${name ? ` "${name}"` : ''} is forbidden: ${why}`, name ? details(r, name) : { group: r.group, kind: r.resource }),
  forbiddenPath: (user: string, verb: string, path: string) => new ApiError(ErrorCode.Forbidden, `forbidden: User "${user}" cannot ${verb} path "${path}"`, {}),
  pathNotFound: () => new ApiError(ErrorCode.NotFound, 'the server could not find the requested resource', {}),
  methodNotAllowed: () => new ApiError(ErrorCode.MethodNotAllowed, 'the server does not allow this method on the requested resource'),
  notAcceptable: (accept: string) => new ApiError(ErrorCode.NotAcceptable, `the server could not serve any of the media types in "Accept: ${accept}"`),
  unsupportedMedia: (type: string) => new ApiError(ErrorCode.UnsupportedMediaType, `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml${type ? ` (got ${type})` : ''}`),
  tooLarge: (limit: number) => new ApiError(ErrorCode.RequestEntityTooLarge, `the request body is larger than ${limit} bytes`),
  tooManyWatches: (limit: number) => new ApiError(ErrorCode.TooManyRequests, `too many watches from this client (at most ${limit})`, { retryAfterSeconds: 1 }),
  timeout: (s: number) => new ApiError(ErrorCode.Timeout, `the request did not complete within ${s}s`),
};

/** The field error constructors of k8s.io/apimachinery/pkg/util/validation/field, with its message formats. */
export const fieldErr = {
  required: (field: string, detail = ''): FieldError => ({ reason: 'FieldValueRequired', field, message: `Required value${detail ? `: ${detail}` : ''}` }),
  invalid: (field: string, value: unknown, detail: string): FieldError => ({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${show(value)}${detail ? `: ${detail}` : ''}` }),
  notSupported: (field: string, value: unknown, supported: readonly string[]): FieldError => ({
    reason: 'FieldValueNotSupported', field, message: `Unsupported value: ${show(value)}: supported values: ${supported.map((s) => `"${s}"`).join(', ')}`,
  }),
  duplicate: (field: string, value: unknown): FieldError => ({ reason: 'FieldValueDuplicate', field, message: `Duplicate value: ${show(value)}` }),
  forbidden: (field: string, detail: string): FieldError => ({ reason: 'FieldValueForbidden', field, message: `Forbidden: ${detail}` }),
  tooLong: (field: string, max: number): FieldError => ({ reason: 'FieldValueTooLong', field, message: `Too long: may not be more than ${max} bytes` }),
  internal: (field: string, detail: string): FieldError => ({ reason: 'InternalError', field, message: `Internal error: ${detail}` }),
  tooMany: (field: string, actual: number, max: number): FieldError => ({ reason: 'FieldValueTooMany', field, message: `Too many: ${actual}: must have at most ${max} items` }),
};

/** A value as Go's %v/%q print it in field errors: strings quoted, the rest as JSON. */
function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** The Status for any error: an ApiError or NodenetError keeps its code; anything else is a 500. */
export function statusOf(e: unknown): Status {
  if (e instanceof NodenetError) {
    const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: e.message, reason: e.reason, code: e.httpStatus };
    const d = e instanceof ApiError ? e.statusDetails : undefined;
    if (d && Object.keys(d).length) s.details = d;
    return s;
  }
  const msg = e instanceof Error ? e.message : String(e);
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `Internal error occurred: ${msg}`, reason: 'InternalError', code: 500 };
}

export function successStatus(details?: StatusDetails): Status {
  const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', message: '', reason: '', code: 200 };
  if (details) s.details = details;
  return s;
}
