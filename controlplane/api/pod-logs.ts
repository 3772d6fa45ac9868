/**
 * controlplane/api/pod-logs: the `log` subresource of a Pod (`kubectl logs`),
 * proxied to the kubelet of the Pod's node as kube-apiserver's LogREST does:
 * the container is checked against the spec (defaulted when the Pod has
 * one), the node's address is its first InternalIP and the port its
 * status.daemonEndpoints.kubeletEndpoint.Port (10250 when unset), and the
 * request carries the node's own token, which only the node and the control
 * plane know. The kubelet's certificate is self-signed and not verified
 * (kube-apiserver without --kubelet-certificate-authority). The answer,
 * streamed for `follow`, is passed on as it comes, errors included (the
 * kubelet answers Status objects); a kubelet that cannot be reached is a
 * 503 naming the node.
 */
import { request } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import type { Tokens } from '../auth/authz.js';
import type { KObject } from '../store/types.js';
import { Query } from '../../lib/net/query.js';
import { apiErrors, fieldErr, type FieldError } from './errors.js';
import { obj, arr, str } from '../../lib/json/loose.js';


export const DEFAULT_KUBELET_PORT = 10250;

/**
 * The query the kubelet gets, from PodLogOptions' query parameters (net/query: read as kube-apiserver converts them),
 * checked as upstream's ValidatePodLogOptions checks them.
 * @throws ApiError: 400 for a value that does not convert, 422 for one out of range
 */
export function kubeletLogQuery(q: Query, pod: string): URLSearchParams {
  const out = new URLSearchParams();
  for (const k of ['follow', 'previous', 'timestamps']) if (q.bool(k)) out.set(k, 'true');
  const errs: FieldError[] = [];
  const tail = q.int64('tailLines');
  const limit = q.int64('limitBytes');
  const sinceSeconds = q.int64('sinceSeconds');
  const sinceTime = q.string('sinceTime');
  if (tail !== undefined && tail < 0) errs.push(fieldErr.invalid('tailLines', tail, 'must be greater than or equal to 0'));
  if (limit !== undefined && limit < 1) errs.push(fieldErr.invalid('limitBytes', limit, 'must be greater than 0'));
  if (sinceSeconds !== undefined && sinceTime !== undefined) errs.push(fieldErr.forbidden('', 'at most one of `sinceTime` or `sinceSeconds` may be specified'));
  else if (sinceSeconds !== undefined && sinceSeconds < 1) errs.push(fieldErr.invalid('sinceSeconds', sinceSeconds, 'must be greater than 0'));
  if (errs.length) throw apiErrors.invalid({ resource: '', group: '', kind: 'PodLogOptions' }, pod, errs);
  if (tail !== undefined) out.set('tailLines', String(tail));
  if (limit !== undefined) out.set('limitBytes', String(limit));
  if (sinceSeconds !== undefined) out.set('sinceSeconds', String(sinceSeconds));
  if (sinceTime !== undefined) out.set('sinceTime', sinceTime);
  return out;
}

/** Where the Pod's container logs are: the node, its kubelet's address, the container. @throws ApiError */
export function logLocation(pod: Readonly<KObject>, node: Readonly<KObject> | undefined, container: string | null): { node: string; host: string; port: number; container: string } {
  const name = str(obj(pod.metadata)?.['name']);
  const spec = obj(pod['spec']) ?? {};
  const names = arr(spec['containers']).map((c) => str(obj(c)?.['name']));
  let c = container ?? '';
  if (!c) {
    if (names.length !== 1) throw apiErrors.badRequest(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`);
    c = names[0]!;
  }
  if (!names.includes(c)) throw apiErrors.badRequest(`container ${c} is not valid for pod ${name}`);
  const nodeName = str(spec['nodeName']);
  if (!nodeName) throw apiErrors.badRequest(`pod ${name} does not have a host assigned`);
  if (!node) throw new NodenetError(ErrorCode.NotAvailable, `node ${JSON.stringify(nodeName)} of pod ${name} does not exist`);
  const status = obj(node['status']) ?? {};
  const ip = arr(status['addresses']).map(obj).find((a) => a?.['type'] === 'InternalIP');
  const host = str(ip?.['address']);
  if (!host) throw new NodenetError(ErrorCode.NotAvailable, `node ${nodeName} has no InternalIP address: its kubelet cannot be reached`);
  const port = obj(obj(status['daemonEndpoints'])?.['kubeletEndpoint'])?.['Port'];
  return { node: nodeName, host, port: typeof port === 'number' && port > 0 ? port : DEFAULT_KUBELET_PORT, container: c };
}

/**
 * Proxies one log request. Resolves with the HTTP status once the answer has ended.
 * @throws ApiError before anything was written
 */
export function proxyPodLog(o: { tokens: Tokens; pod: Readonly<KObject>; node: Readonly<KObject> | undefined; url: URL; req: IncomingMessage; res: ServerResponse; timeoutMs?: number }): Promise<number> {
  const meta = obj(o.pod.metadata) ?? {};
  const q = Query.of(o.url);
  const loc = logLocation(o.pod, o.node, q.string('container') ?? null);
  const query = kubeletLogQuery(q, str(meta['name']));
  const token = o.tokens.nodes[loc.node];
  if (!token) throw new NodenetError(ErrorCode.NotAvailable, `node ${loc.node} has no token here: the control plane cannot authenticate to its kubelet`);
  const path = `/containerLogs/${encodeURIComponent(str(meta['namespace']))}/${encodeURIComponent(str(meta['name']))}/${encodeURIComponent(loc.container)}${query.size ? `?${query}` : ''}`;
  const follow = query.get('follow') === 'true';
  return new Promise<number>((resolve, reject) => {
    let answered = false;
    const up = request({ host: loc.host, port: loc.port, path, method: 'GET', rejectUnauthorized: false, headers: { Authorization: `Bearer ${token}` }, timeout: o.timeoutMs ?? 30_000 }, (r) => {
      answered = true;
      const code = r.statusCode ?? 502;
      o.res.writeHead(code, { 'Content-Type': r.headers['content-type'] ?? 'text/plain', 'Cache-Control': 'no-cache, private', ...(follow ? { 'Transfer-Encoding': 'chunked' } : {}) });
      if (follow) o.res.flushHeaders();
      r.pipe(o.res);
      r.on('end', () => resolve(code));
      r.on('error', () => { o.res.destroy(); resolve(code); });
    });
    // The client went: so does the request to the kubelet (a follow would run on).
    o.res.on('close', () => up.destroy());
    up.on('timeout', () => up.destroy(new Error(`no answer in ${(o.timeoutMs ?? 30_000) / 1000} s`)));
    up.on('response', (r) => { if (follow) r.socket.setTimeout(0); up.setTimeout(0); });
    up.on('error', (e) => {
      if (answered) {
        o.res.destroy();
        resolve(502);
        return;
      }
      reject(new NodenetError(ErrorCode.NotAvailable, `node ${loc.node} is unreachable: Get "https://${loc.host}:${loc.port}${path}": ${e.message}`, { cause: e }));
    });
    up.end();
  });
}
