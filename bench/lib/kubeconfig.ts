/**
 * bench/lib/kubeconfig: the server URL, CA and bearer token from the
 * admin.kubeconfig the control plane writes (its current context). Pure.
 */
import { parse } from 'yaml';

export interface ApiTarget {
  readonly server: URL;
  /** PEM; null for a plain-HTTP server. */
  readonly caPem: string | null;
  readonly token: string;
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

function named(list: unknown, name: string, what: string): Obj {
  if (!Array.isArray(list)) throw new TypeError(`kubeconfig: ${what}s is not a list`);
  const e = list.find((x): x is Obj => isObj(x) && x['name'] === name);
  if (!e) throw new TypeError(`kubeconfig: no ${what} named ${JSON.stringify(name)}`);
  const body = e[what];
  if (!isObj(body)) throw new TypeError(`kubeconfig: ${what} ${JSON.stringify(name)} has no ${what} object`);
  return body;
}

/** @throws TypeError naming what is missing */
export function parseKubeconfig(text: string): ApiTarget {
  const kc = parse(text) as unknown;
  if (!isObj(kc)) throw new TypeError('kubeconfig: not a YAML mapping');
  const ctxName = kc['current-context'];
  if (typeof ctxName !== 'string') throw new TypeError('kubeconfig: no current-context');
  const ctx = named(kc['contexts'], ctxName, 'context');
  const cluster = named(kc['clusters'], String(ctx['cluster']), 'cluster');
  const user = named(kc['users'], String(ctx['user']), 'user');
  const server = cluster['server'];
  if (typeof server !== 'string') throw new TypeError('kubeconfig: the cluster has no server');
  const ca = cluster['certificate-authority-data'];
  if (ca !== undefined && typeof ca !== 'string') throw new TypeError('kubeconfig: certificate-authority-data is not a string');
  const token = user['token'];
  if (typeof token !== 'string' || token === '') throw new TypeError('kubeconfig: the user has no token');
  const url = new URL(server);
  if (url.protocol === 'https:' && ca === undefined) throw new TypeError('kubeconfig: an https server without certificate-authority-data');
  return { server: url, caPem: ca === undefined ? null : Buffer.from(ca, 'base64').toString('utf8'), token };
}
