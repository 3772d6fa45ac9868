/**
 * controlplane/api/server: the Kubernetes REST API over HTTPS (HTTP only on
 * loopback, when asked): authentication, routing, content negotiation,
 * limits, one log line per request, and watch streams.
 *
 * Paths: `/api/v1/...` (core) and `/apis/<group>/<version>/...`, then
 * `namespaces/<ns>/<resource>[/<name>[/<subresource>]]` or
 * `<resource>[/<name>[/<subresource>]]` (cluster-scoped kinds, and lists
 * and watches across namespaces). The legacy `/watch/` prefix is read as
 * `?watch=true`. Verbs as kube-apiserver's RequestInfo derives them.
 *
 * Limits: a request body of at most 3 MiB (kube-apiserver's), a 60 s
 * timeout for everything but watches, and at most `maxWatchesPerUser`
 * concurrent watches per user; a watcher that does not read (more than
 * 16 MiB queued) is cut off, as kube-apiserver drops slow watchers.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { parse as parseYaml } from 'yaml';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { ADMIN_USER, ANONYMOUS_USER, authenticate, type Tokens, type User } from '../auth/authz.js';
import { escalationCheck } from '../auth/escalation.js';
import { impersonate, wantsImpersonation } from '../auth/impersonation.js';
import type { Authorizer, PolicySource, RequestAttributes } from '../auth/rbac.js';
import { answerReview } from '../auth/reviews.js';
import { ServiceAccountTokens } from '../auth/sa-token.js';
import { requestToken } from '../registry/serviceaccount-token.js';
import type { CacheWatch, WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { aggregated, apiGroup, apiGroupList, apiResourceList, apiVersions, versionInfo } from './discovery.js';
import { apiErrors, fieldErr, statusOf, type Status } from './errors.js';
import type { ApiMetrics } from './metrics.js';
import { OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_TYPE, openApiV2Json, openApiV2Protobuf, type OpenApi } from './openapi.js';
import { apiVersionOf, findResource, grOf, RESOURCES, type Resource, type Verb } from './resources.js';
import { parseRV, type DeleteOptions, type FieldValidation, type PatchType, type Rest, type WriteOptions } from './rest.js';
import { toTable } from './table.js';
import { proxyPodLog } from './pod-logs.js';
import { decodeProtobufBody, PROTOBUF_TYPE, type Expected as ProtobufExpected } from './protobuf.js';
import { Query } from '../../lib/net/query.js';
import { finalizeNamespace } from '../registry/namespace.js';
import { bindPod } from '../registry/pod.js';
import { scaleOf, updateScale } from '../registry/scale.js';

export interface ApiServerOptions {
  readonly rest: Rest;
  /** The watch cache: watches, and the pod-log proxy's lookups. */
  readonly cache: WatchCache;
  readonly tokens: Tokens;
  readonly log: Logger;
  readonly clock: Clock;
  readonly openapi: OpenApi;
  /**
   * PEM; absent means plain HTTP (the caller allows that only on loopback). `clientCA`: client certificates it
   * signed authenticate their holder (CN the user, each O a group), as kube-apiserver's --client-ca-file.
   */
  readonly tls?: { readonly cert: string; readonly key: string; readonly clientCA?: string };
  readonly version: string;
  readonly maxBodyBytes?: number;
  readonly requestTimeoutMs?: number;
  readonly maxWatchesPerUser?: number;
  /** How often a watch that allows bookmarks gets one (default 30 s). */
  readonly bookmarkEveryMs?: number;
  /** `/metrics` and the request figures; absent: `/metrics` is a 404. */
  readonly metrics?: ApiMetrics;
  /** Plain HTTP on loopback: a request without a token is the admin (kube-apiserver's old insecure port). */
  readonly anonymousAdmin?: boolean;
  /** The authorizer chain (system:masters, Node, RBAC) every request goes through. */
  readonly authorizer: Authorizer;
  /** RBAC's roles and bindings, for the escalation check on role and binding writes. */
  readonly policy: PolicySource;
  /**
   * A request with no credentials is system:anonymous (kube-apiserver's --anonymous-auth, on by default), which RBAC
   * allows /version and the health endpoints; false: such a request is a 401.
   */
  readonly anonymousAuth?: boolean;
  /** ServiceAccount tokens: issued by TokenRequest, accepted as bearer tokens. Absent: neither. */
  readonly serviceAccountTokens?: ServiceAccountTokens;
  /** --service-account-max-token-expiration, seconds. */
  readonly maxTokenExpirationSeconds?: number;
}

interface Route {
  readonly r: Resource;
  readonly namespace: string;
  /** undefined for a list across namespaces. */
  readonly nsGiven: boolean;
  readonly name: string;
  readonly sub: string;
}

const JSON_TYPE = 'application/json';
const TABLE_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

interface MediaRange {
  type: string;
  params: Record<string, string>;
  q: number;
}

function parseAccept(h: string | undefined): MediaRange[] {
  if (!h) return [{ type: '*/*', params: {}, q: 1 }];
  return h
    .split(',')
    .map((part) => {
      const [type, ...ps] = part.trim().split(';');
      const params: Record<string, string> = {};
      for (const p of ps) {
        const [k, v] = p.split('=').map((x) => x.trim());
        if (k) params[k] = v ?? '';
      }
      const q = params['q'] === undefined ? 1 : Number(params['q']);
      delete params['q'];
      return { type: (type ?? '').trim().toLowerCase(), params, q };
    })
    .filter((m) => m.type)
    .sort((a, b) => b.q - a.q);
}

const jsonish = (t: string) => t === 'application/json' || t === '*/*' || t === 'application/*';

/**
 * The user a verified client certificate names, as kube-apiserver's x509 authenticator reads it: the subject's CN
 * is the user, each O a group, plus system:authenticated; `system:node:<name>` in group system:nodes is that node
 * (the Node authorizer's). null: no certificate, or one the cluster CA did not sign.
 */
export function certificateUser(sock: unknown): User | null {
  const t = sock as Partial<TLSSocket>;
  if (!t.authorized || typeof t.getPeerCertificate !== 'function') return null;
  const subject = t.getPeerCertificate().subject as Record<string, string | string[] | undefined> | undefined;
  const cn = subject?.['CN'];
  const name = Array.isArray(cn) ? cn[0] : cn;
  if (!name) return null;
  const o = subject?.['O'];
  const groups = [...new Set([...(Array.isArray(o) ? o : o ? [o] : []), 'system:authenticated'])];
  const node = /^system:node:(.+)$/.exec(name)?.[1];
  return { name, groups, ...(node && groups.includes('system:nodes') ? { node } : {}) };
}

export class ApiServer {
  private server: Server | null = null;
  private readonly watches = new Map<string, number>();
  private readonly open = new Set<ServerResponse>();
  private readonly maxBody: number;
  private readonly timeoutMs: number;
  private readonly maxWatches: number;
  private readonly bookmarkMs: number;
  private readonly sockets = new Set<Socket>();
  /** Responses to requests with `?pretty`: their JSON is indented, as kube-apiserver's (json.MarshalIndent, two spaces). */
  private readonly pretty = new WeakSet<ServerResponse>();
  private shuttingDown = false;

  constructor(private readonly o: ApiServerOptions) {
    this.maxBody = o.maxBodyBytes ?? 3 * 1024 * 1024;
    this.timeoutMs = o.requestTimeoutMs ?? 60_000;
    this.maxWatches = o.maxWatchesPerUser ?? 200;
    this.bookmarkMs = o.bookmarkEveryMs ?? 30_000;
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    const tls = this.o.tls;
    // A client certificate is asked for, never required: a client without one authenticates with its token.
    this.server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key, ...(tls.clientCA ? { ca: tls.clientCA, requestCert: true, rejectUnauthorized: false } : {}) }, handler) : createHttpServer(handler);
    // Every socket, TLS handshakes included (closeAllConnections knows only HTTP connections): close() ends them all.
    this.server.on('connection', (sock: Socket) => {
      this.sockets.add(sock);
      sock.once('close', () => this.sockets.delete(sock));
    });
    this.server.headersTimeout = 30_000;
    this.server.requestTimeout = 0; // watches are long; each request has its own timer
    this.server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return this.server.address() as AddressInfo;
  }

  /**
   * The first step of a clean stop (kube-apiserver's --shutdown-delay-duration): /readyz turns red while every
   * request is still served, so that load balancers and clients' health checks move away before close().
   */
  beginShutdown(): void {
    this.shuttingDown = true;
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.open.clear();
    const s = this.server;
    this.server = null;
    if (!s) return;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeAllConnections();
    for (const sock of this.sockets) sock.destroy();
    this.sockets.clear();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const url = new URL(req.url ?? '/', 'http://x');
    const q = Query.of(url);
    if (q.bool('pretty')) this.pretty.add(res);
    const method = req.method ?? 'GET';
    let verb = method.toLowerCase();
    let resource = '';
    let labels = { group: '', version: '', resource: '', subresource: '', scope: '' };
    let user: User | null = null;
    this.open.add(res);
    res.on('close', () => this.open.delete(res));
    const done = (code: number) => {
      const durationMs = Math.round((performance.now() - started) * 100) / 100;
      if (labels.resource) this.o.metrics?.observe({ verb: metricVerb(verb, method, req.headers['content-type']), ...labels, code, durationMs });
      this.o.log.info({ [F.verb]: verb, [F.path]: url.pathname, [F.resource]: resource, [F.user]: user?.name ?? '', [F.code]: code, [F.durationMs]: durationMs }, 'request');
    };
    try {
      const path = url.pathname.replace(/\/+$/, '') || '/';
      // Health endpoints answer without a token, as kube-apiserver's do for anonymous probes.
      // /readyz says only whether this server takes requests (it is not shutting down): a store without quorum
      // reaches clients as a 503 from every server, not as a balancer with no server left.
      if (method === 'GET' && (path === '/healthz' || path === '/livez' || path === '/readyz')) {
        const red = path === '/readyz' && this.shuttingDown;
        const body = q.has('verbose')
          ? `[+]ping ok\n${path === '/readyz' ? `[${red ? '-' : '+'}]shutdown ${red ? 'failed: reason withheld' : 'ok'}\n` : ''}${path.slice(1)} check ${red ? 'failed' : 'passed'}\n`
          : red ? '[-]shutdown failed: reason withheld\nreadyz check failed\n' : 'ok';
        res.writeHead(red ? 500 : 200, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' }).end(body);
        return done(red ? 500 : 200);
      }
      // /version answers anonymously too, as kube-apiserver's default system:public-info-viewer role allows.
      if (method === 'GET' && path === '/version') return done(this.json(res, 200, versionInfo(this.o.version)));
      user = this.authenticate(req);
      if (wantsImpersonation(req.headersDistinct)) user = impersonate(req.headersDistinct, user, this.o.authorizer);
      const me = user;
      // A non-resource request (discovery, OpenAPI, /metrics) is authorized on its path, as upstream's RequestInfo
      // makes it one: every path below that is not /api/v1/<resource>... or /apis/<g>/<v>/<resource>...
      const allowPath = (p: string) => {
        const d = this.o.authorizer.authorize({ user: me, verb: method === 'HEAD' ? 'get' : method.toLowerCase(), resourceRequest: false, path: p });
        if (d.decision !== 'allow') throw apiErrors.forbiddenPath(me.name, method.toLowerCase(), p);
      };
      if (method === 'GET' && path === '/metrics' && this.o.metrics) {
        allowPath(path);
        const body = await this.o.metrics.text();
        res.writeHead(200, { 'Content-Type': this.o.metrics.contentType }).end(body);
        return done(200);
      }
      if (method === 'GET' && path === '/openapi/v2') {
        allowPath(path);
        if ((req.headers.accept ?? '').includes(OPENAPI_V2_PROTOBUF) || (req.headers.accept ?? '').includes(OPENAPI_V2_PROTOBUF_TYPE)) {
          res.writeHead(200, { 'Content-Type': OPENAPI_V2_PROTOBUF_TYPE }).end(openApiV2Protobuf());
          return done(200);
        }
        return done(this.json(res, 200, openApiV2Json()));
      }
      if (method === 'GET' && (path === '/openapi/v3' || path.startsWith('/openapi/v3/'))) {
        allowPath(path);
        const doc = path === '/openapi/v3' ? this.o.openapi.index() : this.o.openapi.document(path.slice('/openapi/v3/'.length));
        if (!doc) throw apiErrors.pathNotFound();
        return done(this.json(res, 200, doc, { 'Cache-Control': 'public, immutable', Etag: `"${this.o.openapi.hash()}"` }));
      }
      if (method === 'GET' && (path === '/api' || path === '/apis')) {
        allowPath(path);
        return done(this.discovery(req, res, path === '/api'));
      }
      const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
      let group: string;
      let version: string;
      let rest: string[];
      if (segs[0] === 'api' && segs.length >= 2) [group, version, rest] = ['', segs[1]!, segs.slice(2)];
      else if (segs[0] === 'apis' && segs.length >= 3) [group, version, rest] = [segs[1]!, segs[2]!, segs.slice(3)];
      else if (segs[0] === 'apis' && segs.length === 2 && method === 'GET') {
        allowPath(path);
        const g = apiGroup(segs[1]!);
        if (!g) throw apiErrors.pathNotFound();
        return done(this.json(res, 200, g));
      } else throw apiErrors.pathNotFound();
      if (rest.length === 0) {
        if (method !== 'GET') throw apiErrors.methodNotAllowed();
        allowPath(path);
        const list = apiResourceList(group, version);
        if (!list) throw apiErrors.pathNotFound();
        return done(this.json(res, 200, list));
      }
      let watch = q.bool('watch');
      if (rest[0] === 'watch') {
        watch = true;
        rest = rest.slice(1);
      }
      const route = this.route(group, version, rest);
      resource = grOf(route.r);
      const scope = route.r.namespaced ? (route.nsGiven ? (route.name ? 'resource' : 'namespace') : 'cluster') : route.name ? 'resource' : 'cluster';
      labels = { group, version, resource: route.r.resource, subresource: route.sub, scope };
      verb = this.verbOf(method, route, watch);
      const body = ['POST', 'PUT', 'PATCH'].includes(method) || (method === 'DELETE' && Number(req.headers['content-length'] ?? 0) > 0) ? await this.readBody(req, protobufKind(method, route)) : undefined;
      // A list or watch of one object by `fieldSelector=metadata.name=X` names it to the authorizer, as upstream's
      // RequestInfo does (so a kubelet may watch the one Secret its Pod uses, and a resourceNames rule allows it).
      const selected = (verb === 'list' || verb === 'watch') && !route.name ? singleName(q.string('fieldSelector')) : '';
      const attrs: RequestAttributes = {
        user, verb, resourceRequest: true, apiGroup: group, resource: route.r.resource, subresource: route.sub, namespace: route.namespace, name: route.name || selected,
        ...(verb === 'create' && !route.sub ? { createName: String((body?.value as KObject | undefined)?.metadata?.['name'] ?? '') } : {}),
      };
      const decision = this.o.authorizer.authorize(attrs);
      if (decision.decision !== 'allow') throw apiErrors.forbidden(user.name, verb, route.r, route.namespace, route.name || undefined, route.sub || undefined, decision.reason);
      // A verb the resource does not serve (discovery lists its verbs): 405, after authorization, as upstream's routes.
      if (!route.sub && !route.r.verbs.includes(verb as Verb)) throw apiErrors.methodNotAllowed();
      if (verb === 'watch') return await this.watch(req, res, route, q, user, done);
      // A log is streamed from the node's kubelet (follow runs as long as the client reads): no request timer.
      if (route.sub === 'log' && verb === 'get' && route.r.subresources.includes('log')) {
        const s = await this.o.rest.get(route.r, route.namespace, route.name);
        const nodeName = (s.object['spec'] as { nodeName?: string } | undefined)?.nodeName;
        return done(await proxyPodLog({ tokens: this.o.tokens, pod: s.object as KObject, node: nodeName ? (this.o.cache.get(`nodes//${nodeName}`)?.object as KObject | undefined) : undefined, url, req, res }));
      }
      const timer = setTimeout(() => {
        if (!res.headersSent) done(this.status(res, statusOf(apiErrors.timeout(this.timeoutMs / 1000))));
        res.destroy();
      }, this.timeoutMs);
      try {
        const code = await this.dispatch(req, res, verb, route, q, body, user);
        return done(code);
      } finally {
        clearTimeout(timer);
      }
    } catch (e) {
      if (res.headersSent) {
        res.destroy();
        return done(500);
      }
      const s = statusOf(e);
      if (s.code >= 500) this.o.log.error({ [F.err]: e, [F.path]: url.pathname }, 'request failed');
      return done(this.status(res, s));
    }
  }

  /**
   * Who the request is from: a client certificate the cluster CA signed, else a bearer token, else (no credentials at
   * all) system:anonymous when anonymous requests are allowed. Credentials that name nobody are a 401.
   */
  private authenticate(req: IncomingMessage): User {
    const header = req.headers.authorization;
    if (this.o.anonymousAdmin && header === undefined) return ADMIN_USER;
    const cert = certificateUser(req.socket);
    if (cert) return cert;
    // A certificate the cluster CA did not sign fails the request (upstream's x509 authenticator errs, and an
    // authenticator's error is a 401 before anonymous is considered).
    const t = req.socket as Partial<TLSSocket>;
    if (typeof t.getPeerCertificate === 'function' && !t.authorized && Object.keys(t.getPeerCertificate() ?? {}).length > 0) throw apiErrors.unauthorized();
    if (header !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      const u = m ? this.authenticateToken(m[1]!, [])?.user : null;
      if (!u) throw apiErrors.unauthorized();
      return u;
    }
    if (this.o.anonymousAuth === false) throw apiErrors.unauthorized();
    return ANONYMOUS_USER;
  }

  /** The token authenticators (TokenReview's too): ServiceAccount tokens (JWTs), then the static tokens. */
  private authenticateToken(token: string, audiences: readonly string[]): { user: User; audiences: readonly string[] } | null {
    if (this.o.serviceAccountTokens && ServiceAccountTokens.looksLikeJWT(token)) {
      const v = this.o.serviceAccountTokens.verify(token, audiences);
      if ('error' in v) {
        this.o.log.debug({ [F.err]: v.error }, 'a ServiceAccount token was refused');
        return null;
      }
      return v;
    }
    const u = authenticate(this.o.tokens, `Bearer ${token}`);
    return u ? { user: u, audiences } : null;
  }

  private route(group: string, version: string, rest: string[]): Route {
    const core = group === '' ? 'v1' : undefined;
    if (group === '' && version !== core) throw apiErrors.pathNotFound();
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      const r = findResource(group, version, rest[2]!);
      if (r && r.namespaced) {
        if (rest.length > 5) throw apiErrors.pathNotFound();
        return { r, namespace: rest[1]!, nsGiven: true, name: rest[3] ?? '', sub: rest[4] ?? '' };
      }
      if (group !== '' || !['status', 'finalize'].includes(rest[2]!)) throw apiErrors.pathNotFound();
    }
    const r = findResource(group, version, rest[0]!);
    if (!r || rest.length > 3) throw apiErrors.pathNotFound();
    if (r.namespaced && rest.length > 1) throw apiErrors.pathNotFound();
    return { r, namespace: '', nsGiven: false, name: rest[1] ?? '', sub: rest[2] ?? '' };
  }

  private verbOf(method: string, route: Route, watch: boolean): string {
    const named = route.name !== '';
    switch (method) {
      case 'GET': return named ? (watch ? 'watch' : 'get') : watch ? 'watch' : 'list';
      // A POST to a named object is a create of one of its subresources (a Pod's binding).
      case 'POST': if (!named || route.sub === 'binding' || route.sub === 'token') return 'create'; break;
      case 'PUT': if (named) return 'update'; break;
      case 'PATCH': if (named) return 'patch'; break;
      case 'DELETE': return named ? 'delete' : 'deletecollection';
    }
    throw apiErrors.methodNotAllowed();
  }

  private checkSub(route: Route, allowed: readonly string[]): void {
    if (!allowed.includes(route.sub)) throw apiErrors.pathNotFound();
    if (route.sub === 'status' && !route.r.subresources.includes('status')) throw apiErrors.pathNotFound();
    if (route.sub === 'scale' && !route.r.subresources.includes('scale')) throw apiErrors.pathNotFound();
    if (route.sub === 'binding' && !route.r.subresources.includes('binding')) throw apiErrors.pathNotFound();
    if (route.sub === 'token' && !route.r.subresources.includes('token')) throw apiErrors.pathNotFound();
  }

  /** CreateOptions, UpdateOptions and PatchOptions' common query parameters. */
  private writeOptions(q: Query): WriteOptions {
    const dry = q.strings('dryRun');
    for (const d of dry) if (d !== 'All') throw apiErrors.badRequest(`dryRun: Unsupported value: ${JSON.stringify(d)}: supported values: "All"`);
    const fv = q.string('fieldValidation');
    if (fv !== undefined && !['Strict', 'Warn', 'Ignore'].includes(fv)) throw apiErrors.badRequest(`fieldValidation: Unsupported value: ${JSON.stringify(fv)}: supported values: "Ignore", "Strict", "Warn"`);
    const fm = q.string('fieldManager');
    const out: { dryRun?: boolean; fieldValidation?: FieldValidation; fieldManager?: string } = {};
    if (dry.length) out.dryRun = true;
    if (fv) out.fieldValidation = fv as FieldValidation;
    if (fm) out.fieldManager = fm;
    return out;
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse, verb: string, route: Route, q: Query, body: { value: unknown; type: string } | undefined, user: User): Promise<number> {
    const { rest } = this.o;
    const { r } = route;
    const ns = route.namespace;
    if (r.namespaced && !route.nsGiven && !['list', 'watch'].includes(verb)) throw apiErrors.pathNotFound();
    // A review is answered, never stored (verbs other than create are refused above, as discovery lists none).
    if (r.virtual) {
      this.checkSub(route, ['']);
      if (route.name) throw apiErrors.methodNotAllowed();
      const answer = answerReview({ authorizer: this.o.authorizer, authenticateToken: (token, audiences) => this.authenticateToken(token, audiences) }, r, this.bodyObject(body), user, ns);
      return this.json(res, 201, { apiVersion: apiVersionOf(r), kind: r.kind, ...answer });
    }
    // RBAC's escalation check on role and binding writes, with the object as it would be stored.
    const admit = escalationCheck({ authorizer: this.o.authorizer, policy: this.o.policy }, user, r, ns);
    const writeOptions = (qq: Query): WriteOptions => ({ ...this.writeOptions(qq), user, ...(admit ? { admit } : {}) });
    switch (verb) {
      case 'get': {
        this.checkSub(route, ['', 'status', 'scale']);
        const s = await rest.get(r, ns, route.name);
        if (route.sub === 'scale') return this.json(res, 200, scaleOf(r, s));
        return this.object(req, res, route, 200, s.object as KObject, q);
      }
      case 'list': {
        this.checkSub(route, ['']);
        const l = await rest.list(r, route.nsGiven ? ns : undefined, {
          labelSelector: q.string('labelSelector'),
          fieldSelector: q.string('fieldSelector'),
          limit: q.int64('limit'),
          continue: q.string('continue'),
          resourceVersion: q.string('resourceVersion'),
          resourceVersionMatch: q.string('resourceVersionMatch'),
        });
        const table = this.wantsTable(req);
        if (table) {
          return this.send(res, 200, TABLE_TYPE, JSON.stringify(toTable(grOf(r), l.items.map((s) => s.object as KObject), {
            now: this.o.clock.now(), resourceVersion: String(l.rev), ...(l.continue ? { continue: l.continue } : {}), includeObject: includeObjectOf(q),
          })));
        }
        // The items' JSON is stored as sent on the wire: the list is concatenated, not re-serialised.
        const meta: Record<string, unknown> = { resourceVersion: String(l.rev) };
        if (l.continue) meta['continue'] = l.continue;
        if (l.remaining !== undefined) meta['remainingItemCount'] = l.remaining;
        const head = `{"kind":${JSON.stringify(`${r.kind}List`)},"apiVersion":${JSON.stringify(apiVersionOf(r))},"metadata":${JSON.stringify(meta)},"items":[`;
        return this.send(res, 200, JSON_TYPE, head + l.items.map((s) => s.json).join(',') + ']}');
      }
      case 'create': {
        this.checkSub(route, ['', 'binding', 'token']);
        if (route.sub === 'token') {
          if (!this.o.serviceAccountTokens) throw apiErrors.pathNotFound();
          const answer = await requestToken({ cache: this.o.cache, tokens: this.o.serviceAccountTokens, maxExpirationSeconds: this.o.maxTokenExpirationSeconds }, ns, route.name, this.bodyObject(body), user);
          return this.json(res, 201, answer);
        }
        if (route.sub === 'binding') {
          const b = await bindPod(rest, ns, route.name, this.bodyObject(body), writeOptions(q));
          return this.json(res, b.code, b.body);
        }
        const w = await rest.create(r, ns, this.bodyObject(body), writeOptions(q));
        return this.object(req, res, route, w.code, w.object, q, w.warnings);
      }
      case 'update': {
        if (route.sub === 'finalize' && r.resource === 'namespaces') {
          // PUT /api/v1/namespaces/<n>/finalize: what the namespace controller calls once the namespace is empty.
          const v = this.bodyObject(body) as { metadata?: { resourceVersion?: unknown }; spec?: { finalizers?: unknown } };
          const fin = v.spec?.finalizers;
          if (fin !== undefined && (!Array.isArray(fin) || fin.some((f) => typeof f !== 'string'))) throw apiErrors.badRequest('spec.finalizers: must be a list of strings');
          const rv = typeof v.metadata?.resourceVersion === 'string' ? v.metadata.resourceVersion : undefined;
          const w = await finalizeNamespace(rest, route.name, (fin ?? []) as string[], rv, writeOptions(q));
          return this.object(req, res, route, w.code, w.object, q, w.warnings);
        }
        this.checkSub(route, ['', 'status', 'scale']);
        if (route.sub === 'scale') {
          const v = this.bodyObject(body);
          const w = await updateScale(rest, r, ns, route.name, () => v, writeOptions(q));
          return this.json(res, 200, w.object);
        }
        const w = await rest.update(r, ns, route.name, this.bodyObject(body), { ...writeOptions(q), sub: route.sub === 'status' ? 'status' : undefined });
        return this.object(req, res, route, w.code, w.object, q, w.warnings);
      }
      case 'patch': {
        this.checkSub(route, ['', 'status', 'scale']);
        const type = patchTypeOf(req.headers['content-type']);
        if (!body) throw apiErrors.badRequest('a patch needs a body');
        if (route.sub === 'scale') {
          const w = await updateScale(rest, r, ns, route.name, (scale) => applyScalePatch(type, scale, body.value), writeOptions(q));
          return this.json(res, 200, w.object);
        }
        // PatchOptions.force is for apply only, as ValidatePatchOptions has it (this server's apply records no field
        // ownership to conflict over, so a forced apply and an unforced one do the same).
        const forceParam = q.optionalBool('force');
        if (forceParam !== undefined && type !== 'apply') {
          throw apiErrors.invalid({ resource: '', group: 'meta.k8s.io', kind: 'PatchOptions.meta.k8s.io' }, '', [fieldErr.forbidden('force', 'may not be specified for non-apply patch')]);
        }
        const force = forceParam === true;
        const opts = { ...writeOptions(q), sub: route.sub === 'status' ? ('status' as const) : undefined, force };
        if (type === 'apply' && !opts.fieldManager) throw apiErrors.badRequest('PATCH, application/apply-patch+yaml: fieldManager must be set');
        const w = await rest.patch(r, ns, route.name, type, body.value, opts);
        return this.object(req, res, route, w.code, w.object, q, w.warnings);
      }
      case 'delete': {
        this.checkSub(route, ['']);
        const d = await rest.delete(r, ns, route.name, { ...this.deleteOptions(q, body), user });
        return this.json(res, d.code, d.body);
      }
      case 'deletecollection': {
        this.checkSub(route, ['']);
        if (r.namespaced && !route.nsGiven) throw apiErrors.methodNotAllowed();
        const d = await rest.deleteCollection(r, route.nsGiven ? ns : undefined, {
          labelSelector: q.string('labelSelector'),
          fieldSelector: q.string('fieldSelector'),
        }, { ...this.deleteOptions(q, body), user });
        return this.json(res, d.code, d.body);
      }
    }
    throw apiErrors.methodNotAllowed();
  }

  private bodyObject(body: { value: unknown } | undefined): unknown {
    if (!body) throw apiErrors.badRequest('the request needs a body');
    return body.value;
  }

  /** DeleteOptions: the query's parameters, then the body's fields over them (kube-apiserver decodes both, in that order). */
  private deleteOptions(q: Query, body: { value: unknown } | undefined): DeleteOptions {
    const b = (body?.value ?? {}) as Record<string, unknown>;
    if (typeof b !== 'object' || b === null || Array.isArray(b)) throw apiErrors.badRequest('DeleteOptions must be an object');
    const pp = (b['propagationPolicy'] ?? q.string('propagationPolicy')) as string | undefined;
    if (pp !== undefined && !['Orphan', 'Background', 'Foreground'].includes(pp)) throw apiErrors.badRequest(`propagationPolicy: Unsupported value: ${JSON.stringify(pp)}: supported values: "Background", "Foreground", "Orphan"`);
    const orphan = b['orphanDependents'] ?? q.optionalBool('orphanDependents');
    const gps = b['gracePeriodSeconds'] ?? q.int64('gracePeriodSeconds');
    const dryRun = b['dryRun'] ?? q.strings('dryRun');
    if (!Array.isArray(dryRun)) throw apiErrors.badRequest('dryRun: must be a list of strings');
    for (const d of dryRun) if (d !== 'All') throw apiErrors.badRequest(`dryRun: Unsupported value: ${JSON.stringify(d)}: supported values: "All"`);
    const dry = dryRun.length > 0;
    const pre = b['preconditions'] as { uid?: string; resourceVersion?: string } | undefined;
    return {
      propagationPolicy: (pp as DeleteOptions['propagationPolicy']) ?? (orphan === true ? 'Orphan' : undefined),
      gracePeriodSeconds: gps === undefined || gps === null ? undefined : Number(gps),
      preconditions: pre,
      dryRun: dry,
    };
  }

  private wantsTable(req: IncomingMessage): boolean {
    for (const m of parseAccept(req.headers.accept)) {
      if (m.type === 'application/json' && m.params['as'] === 'Table' && m.params['g'] === 'meta.k8s.io' && (m.params['v'] === 'v1' || m.params['v'] === 'v1beta1')) return true;
      if (jsonish(m.type) && !m.params['as']) return false;
    }
    return false;
  }

  private object(req: IncomingMessage, res: ServerResponse, route: Route, code: number, o: KObject, q: Query, warnings: readonly string[] = []): number {
    const headers: Record<string, string | string[]> = {};
    if (warnings.length) headers['Warning'] = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
    if (this.wantsTable(req)) {
      const t = toTable(grOf(route.r), [o], { now: this.o.clock.now(), resourceVersion: String(o.metadata?.['resourceVersion'] ?? ''), includeObject: includeObjectOf(q) });
      return this.send(res, code, TABLE_TYPE, JSON.stringify(t), headers);
    }
    return this.json(res, code, o, headers);
  }

  private discovery(req: IncomingMessage, res: ServerResponse, core: boolean): number {
    for (const m of parseAccept(req.headers.accept)) {
      if (m.type === 'application/json' && m.params['g'] === 'apidiscovery.k8s.io' && m.params['as'] === 'APIGroupDiscoveryList' && (m.params['v'] === 'v2' || m.params['v'] === 'v2beta1')) {
        const v = m.params['v'] as 'v2' | 'v2beta1';
        // The Content-Type must name exactly what was negotiated, or client-go reads it as the legacy document.
        return this.send(res, 200, `application/json;g=apidiscovery.k8s.io;v=${v};as=APIGroupDiscoveryList`, JSON.stringify(aggregated(core, `apidiscovery.k8s.io/${v}`)));
      }
      if (jsonish(m.type) && !m.params['as']) break;
    }
    const host = req.headers.host ?? '';
    return this.json(res, 200, core ? apiVersions(host) : apiGroupList());
  }

  private async watch(req: IncomingMessage, res: ServerResponse, route: Route, q: Query, user: User, done: (code: number) => void): Promise<void> {
    const { rest, cache } = this.o;
    const { r } = route;
    this.checkSub(route, ['']);
    const count = this.watches.get(user.name) ?? 0;
    if (count >= this.maxWatches) throw apiErrors.tooManyWatches(this.maxWatches);
    let fieldSelector = q.string('fieldSelector');
    if (route.name) fieldSelector = [fieldSelector, `metadata.name=${route.name}`].filter(Boolean).join(',');
    const sel = rest.parseSelectors(r, { labelSelector: q.string('labelSelector'), fieldSelector });
    const rvParam = q.string('resourceVersion') ?? '';
    if (q.optionalBool('sendInitialEvents') === true) throw apiErrors.badRequest('sendInitialEvents is not supported by this server: list, then watch from the list\'s resourceVersion');
    const bookmarks = q.bool('allowWatchBookmarks');
    // As kube-apiserver: timeoutSeconds absent or 0 is a random 30 to 60 minutes; a negative one ends the watch at once.
    const timeoutSeconds = q.int64('timeoutSeconds') ?? 0;
    const timeoutMs = timeoutSeconds === 0 ? (1800 + Math.random() * 1800) * 1000 : Math.max(0, timeoutSeconds * 1000);
    const prefix = r.namespaced && route.nsGiven ? route.namespace : undefined;
    // No resourceVersion: from the newest state (a consistent read, as a list without one); "0": any, the cache's.
    if (rvParam === '') await cache.fresh();
    const afterRev = rvParam === '' || rvParam === '0' ? cache.rev : parseRV(rvParam);

    // kubectl get -w asks for Tables: each event's object is then a one-row Table (the column definitions in the first).
    const table = this.wantsTable(req);
    const includeObject = includeObjectOf(q);
    let headersSent = false;
    res.writeHead(200, { 'Content-Type': table ? TABLE_TYPE : JSON_TYPE, 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders(); // the client learns at once that its watch is open (client-node's informer waits for it)
    this.watches.set(user.name, count + 1);
    this.o.metrics?.watchOpened(r.resource);
    let closed = false;
    let handle: CacheWatch | null = null;
    const timers: unknown[] = [];
    const finish = () => {
      if (closed) return;
      closed = true;
      handle?.stop();
      for (const t of timers) this.o.clock.clearTimeout(t);
      const n = (this.watches.get(user.name) ?? 1) - 1;
      if (n <= 0) this.watches.delete(user.name);
      else this.watches.set(user.name, n);
      this.o.metrics?.watchClosed(r.resource);
      if (!res.writableEnded) res.end();
      done(200);
    };
    res.on('close', finish);
    const write = (type: string, object: unknown): void => {
      if (closed) return;
      if (table && type !== 'ERROR' && type !== 'BOOKMARK') {
        const o = (typeof object === 'string' ? JSON.parse(object) : object) as KObject;
        object = toTable(grOf(r), [o], { now: this.o.clock.now(), resourceVersion: String(o.metadata?.['resourceVersion'] ?? ''), includeObject, noHeaders: headersSent });
        headersSent = true;
      }
      res.write(`{"type":"${type}","object":${typeof object === 'string' ? object : JSON.stringify(object)}}\n`);
      if (res.writableLength > 16 * 1024 * 1024) {
        this.o.log.warn({ [F.user]: user.name, [F.resource]: grOf(r) }, 'watcher too slow; its watch is closed');
        finish();
      }
    };
    const inScope = (key: string) => prefix === undefined || key.startsWith(`${grOf(r)}/${prefix}/`);
    // rv unset or 0: the current state as ADDED events first, as kube-apiserver does.
    if (rvParam === '' || rvParam === '0') {
      for (const s of cache.list(grOf(r), prefix).items) if (rest.matches(r, sel, s.object)) write('ADDED', s.json);
    }
    const onEvent = (ev: StoreEvent) => {
      if (!inScope(ev.key)) return;
      const now = rest.matches(r, sel, ev.cur.object);
      const before = ev.prev !== null && rest.matches(r, sel, ev.prev.object);
      if (ev.type === 'DELETED') {
        if (before) write('DELETED', ev.cur.json);
      } else if (now && before) write('MODIFIED', ev.cur.json);
      else if (now) write('ADDED', ev.cur.json);
      else if (before) write('DELETED', ev.cur.json); // stopped matching the selector
    };
    // Too old: an ERROR event in a 200 stream, as kube-apiserver sends it (kubectl and informers then list again).
    const onError = (e: NodenetError) => {
      write('ERROR', statusOf(e.code === ErrorCode.Expired ? apiErrors.expired(e.message) : e));
      finish();
    };
    handle = cache.watch({ gr: grOf(r), namespace: prefix, afterRev, onEvent, onError });
    if (closed) {
      handle.stop();
      return;
    }
    if (bookmarks) {
      const tick = () => {
        write('BOOKMARK', { kind: r.kind, apiVersion: apiVersionOf(r), metadata: { resourceVersion: String(handle!.progressRev) } });
        if (!closed) timers.push(this.o.clock.setTimeout(tick, this.bookmarkMs));
      };
      timers.push(this.o.clock.setTimeout(tick, this.bookmarkMs));
    }
    timers.push(this.o.clock.setTimeout(finish, timeoutMs));
    void req;
  }

  /** `protobufAs`: the kind a protobuf body must be here (undefined: protobuf is refused, as for patches). */
  private async readBody(req: IncomingMessage, protobufAs?: ProtobufExpected): Promise<{ value: unknown; type: string }> {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (Number(req.headers['content-length'] ?? 0) > this.maxBody) throw apiErrors.tooLarge(this.maxBody);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      if (size > this.maxBody) throw apiErrors.tooLarge(this.maxBody);
      chunks.push(c);
    }
    if (type === PROTOBUF_TYPE) {
      // Decoded into the JSON object it stands for, which then goes the JSON path (validation, defaults, admission).
      if (!protobufAs) throw new NodenetError(ErrorCode.UnsupportedMediaType, `${PROTOBUF_TYPE} bodies are read for create, update and delete; a patch is application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json or application/apply-patch+yaml`);
      return { value: decodeProtobufBody(Buffer.concat(chunks), protobufAs), type };
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const known = ['application/json', 'application/yaml', 'application/strategic-merge-patch+json', 'application/merge-patch+json', 'application/json-patch+json', 'application/apply-patch+yaml', ''];
    if (!known.includes(type)) throw apiErrors.unsupportedMedia(type);
    try {
      const value = type === 'application/yaml' || type === 'application/apply-patch+yaml' ? parseYaml(text, { strict: true, uniqueKeys: true, maxAliasCount: 100 }) : JSON.parse(text);
      return { value, type };
    } catch (e) {
      throw apiErrors.badRequest(`the body of the request could not be decoded as ${type || 'JSON'}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private json(res: ServerResponse, code: number, body: unknown, headers: Record<string, string | string[]> = {}): number {
    return this.send(res, code, JSON_TYPE, JSON.stringify(body), headers);
  }

  private status(res: ServerResponse, s: Status): number {
    const headers: Record<string, string> = {};
    if (s.details?.retryAfterSeconds) headers['Retry-After'] = String(s.details.retryAfterSeconds);
    if (s.code === 401) headers['WWW-Authenticate'] = 'Bearer realm="nodenet"';
    // The rest of a body too large is never read: the connection cannot carry another request.
    if (s.code === 413) headers['Connection'] = 'close';
    return this.json(res, s.code, s, headers);
  }

  private send(res: ServerResponse, code: number, type: string, body: string, headers: Record<string, string | string[]> = {}): number {
    if (res.headersSent) return code;
    if (this.pretty.has(res) && type.startsWith(JSON_TYPE)) body = `${JSON.stringify(JSON.parse(body), null, 2)}\n`;
    res.writeHead(code, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...headers });
    res.end(body);
    return code;
  }

}

/** The kind a protobuf body must be for this method and path; undefined where none is read (patches). */
/** The name a field selector pins with `metadata.name=X` (or `==`), and nothing else; '' otherwise. */
export function singleName(fieldSelector: string | undefined): string {
  const m = /^\s*metadata\.name\s*==?\s*([^,=!\s]+)\s*$/.exec(fieldSelector ?? '');
  return m ? m[1]! : '';
}

function protobufKind(method: string, route: Route): ProtobufExpected | undefined {
  if (method === 'PATCH') return undefined;
  if (method === 'DELETE') return { apiVersion: 'v1', kind: 'DeleteOptions' };
  if (route.sub === 'binding') return { apiVersion: 'v1', kind: 'Binding' };
  if (route.sub === 'scale') return { apiVersion: 'autoscaling/v1', kind: 'Scale' };
  if (route.sub === 'token') return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest' };
  return { apiVersion: apiVersionOf(route.r), kind: route.r.kind };
}

/** kube-apiserver's verb label: GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, DELETECOLLECTION. */
function metricVerb(verb: string, method: string, contentType: string | undefined): string {
  if (verb === 'patch' && (contentType ?? '').startsWith('application/apply-patch')) return 'APPLY';
  if (verb === 'get' || verb === 'list' || verb === 'watch' || verb === 'deletecollection') return verb.toUpperCase();
  return method;
}

function includeObjectOf(q: Query): 'None' | 'Metadata' | 'Object' {
  const v = q.string('includeObject');
  if (v === undefined || v === '') return 'Metadata';
  if (v === 'None' || v === 'Metadata' || v === 'Object') return v;
  throw apiErrors.badRequest(`includeObject: Unsupported value: ${JSON.stringify(v)}: supported values: "None", "Metadata", "Object"`);
}

function patchTypeOf(ct: string | undefined): PatchType {
  const t = (ct ?? '').split(';')[0]!.trim().toLowerCase();
  switch (t) {
    case 'application/json-patch+json': return 'json';
    case 'application/merge-patch+json': return 'merge';
    case 'application/strategic-merge-patch+json': return 'strategic';
    case 'application/apply-patch+yaml': return 'apply';
  }
  throw new NodenetError(ErrorCode.UnsupportedMediaType, `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`);
}

/** A patch of a Scale: only spec.replicas matters. */
function applyScalePatch(type: PatchType, scale: KObject, patch: unknown): unknown {
  if (type === 'json') {
    const ops = Array.isArray(patch) ? patch : [];
    const out = structuredClone(scale) as Record<string, Record<string, unknown>>;
    for (const op of ops as { op?: string; path?: string; value?: unknown }[]) if ((op.op === 'replace' || op.op === 'add') && op.path === '/spec/replicas') out['spec']!['replicas'] = op.value;
    return out;
  }
  const p = (patch ?? {}) as { spec?: { replicas?: unknown }; metadata?: unknown };
  return { ...scale, ...(p.metadata ? { metadata: { ...(scale.metadata ?? {}), ...(p.metadata as object) } } : {}), spec: { ...(scale['spec'] as object), ...(p.spec ?? {}) } };
}

export { RESOURCES };
