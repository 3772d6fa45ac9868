/**
 * pods/kubelet-api: the kubelet's writes to the API server, as plain JSON
 * requests with the node's kubeconfig (its CA and token applied as
 * client-node applies them). client-node's typed calls run bodies through
 * its ObjectSerializer, which wants Date objects where the status and the
 * Events carry RFC 3339 strings; the kubelet sends what it built as is.
 * TokenRequest (serviceaccounts/<sa>/token) gives the projected volumes'
 * tokens, bound to their Pod.
 */
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeletApi } from './kubelet.js';
import type { IssuedToken, TokenRequestSpec } from './token-manager.js';

export class HttpError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

export function kubeletApi(kc: KubeConfig, timeoutMs = 30_000): KubeletApi {
  const call = async (method: string, path: string, body: unknown, contentType = 'application/json'): Promise<unknown> => {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster');
    const url = new URL(cluster.server + path);
    const opts: RequestOptions & { headers?: Record<string, string> } = {};
    await kc.applyToHTTPSOptions(opts as never);
    const data = body === undefined ? undefined : JSON.stringify(body);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(url, { ...opts, method, headers: { ...opts.headers, Accept: 'application/json', ...(data ? { 'Content-Type': contentType, 'Content-Length': String(Buffer.byteLength(data)) } : {}) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) {
            try { resolve(text ? JSON.parse(text) : null); } catch { resolve(null); }
            return;
          }
          let message = text.slice(0, 300);
          try { message = String((JSON.parse(text) as { message?: unknown }).message ?? message); } catch { /* not a Status */ }
          reject(new HttpError(code, `${method} ${path}: ${code} ${message}`));
        });
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)));
      req.on('error', reject);
      if (data) req.write(data);
      req.end();
    });
  };
  const pod = (ns: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}`;
  return {
    async patchPodStatus(ns, name, status) {
      await call('PATCH', `${pod(ns, name)}/status`, { status }, 'application/merge-patch+json');
    },
    async deletePod(ns, name, uid) {
      try {
        await call('DELETE', pod(ns, name), { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid } });
      } catch (e) {
        // Gone already, or a new Pod of that name (another uid): nothing of ours is left to delete.
        if (e instanceof HttpError && (e.code === 404 || e.code === 409)) return;
        throw e;
      }
    },
    async requestToken(req: TokenRequestSpec): Promise<IssuedToken> {
      const body = {
        apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest',
        spec: { audiences: [...req.audiences], expirationSeconds: req.expirationSeconds, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: req.pod.name, uid: req.pod.uid } },
      };
      const r = await call('POST', `/api/v1/namespaces/${encodeURIComponent(req.namespace)}/serviceaccounts/${encodeURIComponent(req.serviceAccount)}/token`, body) as { spec?: { expirationSeconds?: unknown }; status?: { token?: unknown; expirationTimestamp?: unknown } } | null;
      const token = r?.status?.token;
      const exp = Date.parse(String(r?.status?.expirationTimestamp ?? ''));
      if (typeof token !== 'string' || !token || !Number.isFinite(exp)) throw new Error('TokenRequest: the answer has no status.token and status.expirationTimestamp');
      const secs = r?.spec?.expirationSeconds;
      return { token, expiresAt: exp, expirationSeconds: typeof secs === 'number' && secs > 0 ? secs : req.expirationSeconds };
    },
    async createEvent(ns, event) {
      await call('POST', `/api/v1/namespaces/${encodeURIComponent(ns)}/events`, event);
    },
    async patchEvent(ns, name, patch) {
      await call('PATCH', `/api/v1/namespaces/${encodeURIComponent(ns)}/events/${encodeURIComponent(name)}`, patch, 'application/merge-patch+json');
    },
  };
}
