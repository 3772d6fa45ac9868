/**
 * controlplane/kinds/podspec: the pod spec as kube-apiserver defaults and
 * validates it wherever it appears: SetDefaults_PodSpec/Container/Probe/
 * HTTPGetAction, ValidatePodSpec and ValidatePodTemplateSpec. Pods (pod.ts)
 * and the templates of Deployments and ReplicaSets (apps.ts) share it. A
 * Pod's spec is immutable but for a few fields; a workload's template is
 * patchable whole, so these are the rules a template patch reaches. Pure.
 *
 * Upstream's rules (x: here, -: left out, why):
 *   containers   x required; names (label, unique across regular and init), image required,
 *                  terminationMessagePolicy, imagePullPolicy, restartPolicy only on init containers (Always)
 *                x ports: name (IANA, unique), containerPort required and valid, hostPort valid and unique per
 *                  protocol/hostIP (must equal containerPort with hostNetwork), protocol
 *                x env: name, valueFrom (one source; fieldRef paths), envFrom (one source, prefix)
 *                x resources: names, quantities (non-negative, integer for extended), requests <= limits,
 *                  extended resources need limit = request, hugepages need cpu or memory
 *                x probes and lifecycle handlers: one handler, exec command, httpGet path/port/scheme/headers,
 *                  tcpSocket/grpc port, sleep within the grace period, non-negative numbers, liveness and
 *                  startup successThreshold 1, no terminationGracePeriodSeconds on readiness; init containers
 *                  only with restartPolicy Always
 *                x volumeMounts (volumes.ts): name among the valid volumes, mountPath required and unique,
 *                  subPath/subPathExpr relative without '..' and exclusive (none on an image volume or an
 *                  ephemeral container), mountPropagation (Bidirectional only when privileged),
 *                  recursiveReadOnly; volumeDevices: a PVC or ephemeral volume, devicePath unique, no '..',
 *                  neither name nor path also a mount's
 *                - securityContext, resizePolicy (nodenet ignores security contexts; validating half of them
 *                  would claim more than it checks)
 *   pod spec     x restartPolicy, dnsPolicy (+dnsConfig: None needs nameservers, limits, searches), nodeSelector,
 *                x affinity (node selector terms, operators, weights; pod (anti-)affinity terms, topologyKey),
 *                x tolerations, topologySpreadConstraints, activeDeadlineSeconds, hostname/subdomain,
 *                x serviceAccountName, nodeName, priorityClassName, runtimeClassName, preemptionPolicy, os,
 *                x hostAliases, imagePullSecrets, readinessGates, schedulingGates, terminationGracePeriodSeconds
 *                x volumes (volumes.ts): name (DNS label, unique), exactly one source ("must specify a volume
 *                  type", "may not specify more than 1 volume type"), each of upstream's 30 sources with its
 *                  own rules (emptyDir sizeLimit, hostPath path and type, secret/configMap/downwardAPI/projected
 *                  items, paths and modes, token expiry, clusterTrustBundle, PVC claimName, ephemeral claim
 *                  template, nfs, csi driver, image reference, the cloud and network disks' required fields)
 *                - volumes' checks that need the Pod's name (ephemeral PVC names), securityContext, overhead,
 *                  resourceClaims, pod-level resources
 *   template     x labels (at upstream's path spec.template.labels), annotation keys, no ephemeral containers
 *
 * The API accepts every volume type upstream's does; nodenet's kubelet (agent/src/pods/pod-spec.ts) runs
 * emptyDir (disk, or Memory as a tmpfs with its sizeLimit), configMap, secret, downwardAPI and projected
 * volumes (configMap, secret, downwardAPI and serviceAccountToken sources), mounted with readOnly, subPath
 * and subPathExpr. Any other volume type or projection, an emptyDir medium other than Memory, a mountPath
 * that is not absolute or is /, volumeDevices, mountPropagation other than None, recursiveReadOnly other
 * than Disabled, and init or ephemeral containers make the kubelet refuse the whole Pod: a Warning Event
 * naming every such field, then phase Failed with reason UnsupportedPodSpec.
 *
 * Fields whose defaults are new here (probe thresholds, httpGet path and scheme, fieldRef apiVersion,
 * a hostNetwork Pod's hostPort; and the volume defaults volumes.ts lists, not written at all, e.g. a volume
 * without a source is an emptyDir) are judged at their default when absent: kube-apiserver defaults what it
 * reads from storage, and a /status write here stores the spec as it was, undefaulted.
 */
import { containerResourceNameErrors, isHugePages, overcommits, quantityErrors } from './resource-names.js';
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelValueProblem } from '../api/selectors.js';
import {
  arr,
  blank,
  inclusiveRange,
  ipErrors,
  isSet,
  labelSelectorErrors,
  labelsErrors,
  labelValueErrors,
  MAX_INT32,
  nameErrors,
  nonNegative,
  num,
  type O,
  obj,
  portNameProblems,
  portNumErrors,
  portNumOrNameErrors,
  quantityNanos,
  quantityString,
  operatorErrors,
  qualifiedNameErrors,
  str,
} from './common.js';
import { containerVolumeErrors, ephemeralContainerVolumeErrors, type VolumeMap, volumesErrors } from './volumes.js';

const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const PROBES = ['livenessProbe', 'readinessProbe', 'startupProbe'] as const;

/** SetDefaults_HTTPGetAction. */
function defaultHTTPGet(h: O | undefined): void {
  if (!h) return;
  if (blank(h['path'])) h['path'] = '/';
  if (blank(h['scheme'])) h['scheme'] = 'HTTP';
}

/** SetDefaults_PodSpec and the defaults of its containers (SetDefaults_Container, _Probe, _HTTPGetAction, _ObjectFieldSelector): Pods and templates alike. */
export function defaultPodSpec(spec: O): void {
  spec['restartPolicy'] ??= 'Always';
  spec['dnsPolicy'] ??= 'ClusterFirst';
  spec['schedulerName'] ??= 'default-scheduler';
  spec['terminationGracePeriodSeconds'] ??= 30;
  spec['securityContext'] ??= {};
  spec['enableServiceLinks'] ??= true;
  for (const list of ['containers', 'initContainers']) {
    for (const c of arr(spec[list])) {
      const ct = obj(c);
      if (!ct) continue;
      ct['terminationMessagePath'] ??= '/dev/termination-log';
      ct['terminationMessagePolicy'] ??= 'File';
      const image = str(ct['image']);
      const tag = image.includes('@') ? 'digest' : image.slice(image.lastIndexOf('/') + 1).split(':')[1] ?? '';
      ct['imagePullPolicy'] ??= tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
      ct['resources'] ??= {};
      for (const p of arr(ct['ports'])) {
        const port = obj(p);
        if (port) port['protocol'] ??= 'TCP';
      }
      for (const k of PROBES) {
        const pr = obj(ct[k]);
        if (!pr) continue;
        if (!pr['timeoutSeconds']) pr['timeoutSeconds'] = 1;
        if (!pr['periodSeconds']) pr['periodSeconds'] = 10;
        if (!pr['successThreshold']) pr['successThreshold'] = 1;
        if (!pr['failureThreshold']) pr['failureThreshold'] = 3;
        defaultHTTPGet(obj(pr['httpGet']));
      }
      for (const h of ['postStart', 'preStop']) defaultHTTPGet(obj(obj(obj(ct['lifecycle'])?.[h])?.['httpGet']));
      for (const e of arr(ct['env'])) {
        const ref = obj(obj(obj(e)?.['valueFrom'])?.['fieldRef']);
        if (ref && blank(ref['apiVersion'])) ref['apiVersion'] = 'v1';
      }
    }
  }
}

/** ValidatePodSpec (isPod: the spec is a Pod's, not a template's). */
export function validatePodSpec(path: string, spec: O, isPod: boolean): FieldError[] {
  const errs: FieldError[] = [];
  if (!isSet(spec['terminationGracePeriodSeconds'])) errs.push(fieldErr.required(`${path}.terminationGracePeriodSeconds`));
  const grace = typeof spec['terminationGracePeriodSeconds'] === 'number' ? spec['terminationGracePeriodSeconds'] : null;
  const containers = arr(spec['containers']).map((c) => obj(c) ?? {});
  const inits = arr(spec['initContainers']).map((c) => obj(c) ?? {});
  const { vols, errs: volErrs } = volumesErrors(`${path}.volumes`, arr(spec['volumes']), isPod);
  errs.push(...volErrs);
  errs.push(...containersErrors(`${path}.containers`, containers, grace, vols));
  errs.push(...initContainersErrors(`${path}.initContainers`, inits, containers, grace, vols));
  // validateEphemeralContainers: only their volume rules here (a Pod may not be created with any; a template never has any).
  arr(spec['ephemeralContainers']).forEach((c, i) => errs.push(...ephemeralContainerVolumeErrors(`${path}.ephemeralContainers[${i}]`, obj(c) ?? {}, vols)));
  if (spec['hostNetwork'] === true) {
    containers.forEach((c, i) => {
      arr(c['ports']).forEach((p, j) => {
        const port = obj(p) ?? {};
        // A Pod's hostPort defaults to its containerPort (SetDefaults_Pod): absent is that default.
        const hp = isPod && !port['hostPort'] ? num(port['containerPort']) : num(port['hostPort']);
        if ((isPod || hp !== 0) && hp !== num(port['containerPort'])) errs.push(fieldErr.invalid(`${path}.containers[${i}].ports[${j}].hostPort`, hp, 'must match `containerPort` when `hostNetwork` is true'));
      });
    });
  }
  errs.push(...enumErrors(`${path}.restartPolicy`, spec['restartPolicy'], ['Always', 'OnFailure', 'Never']));
  errs.push(...enumErrors(`${path}.dnsPolicy`, spec['dnsPolicy'], ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None']));
  errs.push(...labelsErrors(`${path}.nodeSelector`, spec['nodeSelector']));
  arr(spec['imagePullSecrets']).forEach((s, i) => {
    const ref = obj(s) ?? {};
    if (Object.keys(ref).some((k) => k !== 'name')) errs.push(fieldErr.invalid(`${path}.imagePullSecrets[${i}]`, ref, 'only name may be set'));
  });
  errs.push(...affinityErrors(`${path}.affinity`, obj(spec['affinity'])));
  errs.push(...dnsConfigErrors(`${path}.dnsConfig`, spec['dnsConfig'], spec['dnsPolicy']));
  arr(spec['readinessGates']).forEach((g, i) => errs.push(...qualifiedNameErrors(`${path}.readinessGates[${i}].conditionType`, obj(g)?.['conditionType'])));
  const gates = new Set<string>();
  arr(spec['schedulingGates']).forEach((g, i) => {
    const name = str(obj(g)?.['name']);
    errs.push(...qualifiedNameErrors(`${path}.schedulingGates[${i}]`, name));
    if (gates.has(name)) errs.push(fieldErr.duplicate(`${path}.schedulingGates[${i}]`, name));
    gates.add(name);
  });
  errs.push(...topologySpreadErrors(`${path}.topologySpreadConstraints`, arr(spec['topologySpreadConstraints'])));
  if (!blank(spec['serviceAccountName'])) errs.push(...nameErrors(`${path}.serviceAccountName`, 'subdomain', str(spec['serviceAccountName'])));
  if (!blank(spec['nodeName'])) errs.push(...nameErrors(`${path}.nodeName`, 'subdomain', str(spec['nodeName'])));
  const ads = spec['activeDeadlineSeconds'];
  if (isSet(ads) && (typeof ads !== 'number' || ads < 1 || ads > MAX_INT32)) errs.push(fieldErr.invalid(`${path}.activeDeadlineSeconds`, ads, inclusiveRange(1, MAX_INT32)));
  if (!blank(spec['hostname'])) errs.push(...nameErrors(`${path}.hostname`, 'label', str(spec['hostname'])));
  if (!blank(spec['subdomain'])) errs.push(...nameErrors(`${path}.subdomain`, 'label', str(spec['subdomain'])));
  errs.push(...tolerationsErrors(`${path}.tolerations`, arr(spec['tolerations'])));
  arr(spec['hostAliases']).forEach((a, i) => {
    const alias = obj(a) ?? {};
    errs.push(...ipErrors(`${path}.hostAliases[${i}].ip`, str(alias['ip'])));
    arr(alias['hostnames']).forEach((h, j) => errs.push(...nameErrors(`${path}.hostAliases[${i}].hostnames[${j}]`, 'subdomain', str(h))));
  });
  if (!blank(spec['priorityClassName'])) errs.push(...nameErrors(`${path}.priorityClassName`, 'subdomain', str(spec['priorityClassName'])));
  if (isSet(spec['runtimeClassName'])) errs.push(...nameErrors(`${path}.runtimeClassName`, 'subdomain', str(spec['runtimeClassName'])));
  if (isSet(spec['preemptionPolicy'])) errs.push(...enumErrors(`${path}.preemptionPolicy`, spec['preemptionPolicy'], ['PreemptLowerPriority', 'Never']));
  const os = obj(spec['os']);
  if (os) {
    if (blank(os['name'])) errs.push(fieldErr.required(`${path}.os.name`, 'cannot be empty'));
    else if (os['name'] !== 'linux' && os['name'] !== 'windows') errs.push(fieldErr.notSupported(`${path}.os`, os['name'], ['linux', 'windows']));
  }
  return errs;
}

/** A field that must be one of `values`: Required when empty, NotSupported otherwise (values in upstream's order). */
function enumErrors(path: string, v: unknown, values: readonly string[]): FieldError[] {
  if (v === '') return [fieldErr.required(path)];
  return values.includes(String(v)) && typeof v === 'string' ? [] : [fieldErr.notSupported(path, v ?? null, values)];
}

/** validateContainers. */
function containersErrors(path: string, containers: O[], grace: number | null, vols: VolumeMap): FieldError[] {
  if (containers.length === 0) return [fieldErr.required(path)];
  const errs: FieldError[] = [];
  const names = new Set<string>();
  containers.forEach((c, i) => {
    const p = `${path}[${i}]`;
    errs.push(...containerCommonErrors(p, c, vols));
    const name = str(c['name']);
    if (names.has(name)) errs.push(fieldErr.duplicate(`${p}.name`, name));
    else names.add(name);
    if (obj(c['lifecycle'])) errs.push(...lifecycleErrors(`${p}.lifecycle`, obj(c['lifecycle'])!, grace));
    errs.push(...probeErrors(`${p}.livenessProbe`, c['livenessProbe'], grace, 'liveness'));
    errs.push(...probeErrors(`${p}.readinessProbe`, c['readinessProbe'], grace, 'readiness'));
    errs.push(...probeErrors(`${p}.startupProbe`, c['startupProbe'], grace, 'startup'));
    if (isSet(c['restartPolicy'])) errs.push(fieldErr.forbidden(`${p}.restartPolicy`, 'may not be set for non-init containers'));
  });
  errs.push(...hostPortConflicts(path, containers));
  return errs;
}

/** validateInitContainers. */
function initContainersErrors(path: string, inits: O[], regular: O[], grace: number | null, vols: VolumeMap): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set(regular.map((c) => str(c['name'])));
  inits.forEach((c, i) => {
    const p = `${path}[${i}]`;
    errs.push(...containerCommonErrors(p, c, vols));
    const rp = c['restartPolicy'];
    if (isSet(rp) && rp !== 'Always') errs.push(fieldErr.notSupported(`${p}.restartPolicy`, rp, ['Always']));
    const name = str(c['name']);
    if (names.has(name)) errs.push(fieldErr.duplicate(`${p}.name`, name));
    else if (name !== '') names.add(name);
    errs.push(...hostPortConflicts(path, [c], i));
    if (rp === 'Always') {
      if (obj(c['lifecycle'])) errs.push(...lifecycleErrors(`${p}.lifecycle`, obj(c['lifecycle'])!, grace));
      errs.push(...probeErrors(`${p}.livenessProbe`, c['livenessProbe'], grace, 'liveness'));
      errs.push(...probeErrors(`${p}.readinessProbe`, c['readinessProbe'], grace, 'readiness'));
      errs.push(...probeErrors(`${p}.startupProbe`, c['startupProbe'], grace, 'startup'));
    } else {
      for (const k of ['lifecycle', ...PROBES]) if (isSet(c[k])) errs.push(fieldErr.forbidden(`${p}.${k}`, 'may not be set for init containers without restartPolicy=Always'));
    }
  });
  return errs;
}

/** validateContainerCommon (without security context and resize policy). */
function containerCommonErrors(path: string, c: O, vols: VolumeMap): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(c['name']);
  if (name === '') errs.push(fieldErr.required(`${path}.name`));
  else errs.push(...nameErrors(`${path}.name`, 'label', name));
  // Whitespace is allowed here (an image of " " is a special token in some templates); a Pod's is checked in podOnlyErrors.
  if (blank(c['image'])) errs.push(fieldErr.required(`${path}.image`));
  errs.push(...enumErrors(`${path}.terminationMessagePolicy`, c['terminationMessagePolicy'], ['File', 'FallbackToLogsOnError']));
  errs.push(...containerPortsErrors(`${path}.ports`, arr(c['ports'])));
  errs.push(...envErrors(`${path}.env`, arr(c['env'])));
  errs.push(...envFromErrors(`${path}.envFrom`, arr(c['envFrom'])));
  errs.push(...containerVolumeErrors(path, c, vols));
  errs.push(...enumErrors(`${path}.imagePullPolicy`, c['imagePullPolicy'], ['Always', 'IfNotPresent', 'Never']));
  errs.push(...resourcesErrors(`${path}.resources`, obj(c['resources']) ?? {}));
  return errs;
}

/** validateContainerPorts. */
function containerPortsErrors(path: string, ports: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const port = obj(p) ?? {};
    const ip = `${path}[${i}]`;
    const name = str(port['name']);
    if (name !== '') {
      const problems = portNameProblems(name);
      if (problems.length) for (const m of problems) errs.push(fieldErr.invalid(`${ip}.name`, name, m));
      else if (names.has(name)) errs.push(fieldErr.duplicate(`${ip}.name`, name));
      else names.add(name);
    }
    if (!port['containerPort']) errs.push(fieldErr.required(`${ip}.containerPort`));
    else errs.push(...portNumErrors(`${ip}.containerPort`, port['containerPort']));
    if (port['hostPort']) errs.push(...portNumErrors(`${ip}.hostPort`, port['hostPort']));
    if (blank(port['protocol'])) errs.push(fieldErr.required(`${ip}.protocol`));
    else if (!PROTOCOLS.includes(String(port['protocol']))) errs.push(fieldErr.notSupported(`${ip}.protocol`, port['protocol'], PROTOCOLS));
  });
  return errs;
}

/** AccumulateUniqueHostPorts over `containers` (indexed from `first` under `path`). */
function hostPortConflicts(path: string, containers: O[], first = 0): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  containers.forEach((c, ci) => {
    arr(c['ports']).forEach((p, pi) => {
      const port = obj(p) ?? {};
      if (!port['hostPort']) return;
      const key = `${str(port['protocol'])}/${str(port['hostIP'])}/${String(port['hostPort'])}`;
      if (seen.has(key)) errs.push(fieldErr.duplicate(`${path}[${first + ci}].ports[${pi}].hostPort`, key));
      seen.add(key);
    });
  });
  return errs;
}

/** IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation, on by default since 1.32). */
function envNameErrors(path: string, v: string): FieldError[] {
  if (v === '') return [fieldErr.invalid(path, v, 'environment variable name must be non-empty')];
  for (const ch of v) {
    const c = ch.codePointAt(0)!;
    if (c > 127 || c < 32 || c === 127 || ch === '=') return [fieldErr.invalid(path, v, "a valid environment variable name must consist only of printable ASCII characters other than '='")];
  }
  return [];
}

const ENV_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs'];
/** The v1 Pod field labels ConvertDownwardAPIFieldLabel knows. */
const POD_FIELD_LABELS = new Set(['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.restartPolicy', 'spec.serviceAccountName', 'spec.schedulerName', 'status.phase', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs']);
const RESOURCE_FIELDS = ['limits.cpu', 'limits.ephemeral-storage', 'limits.memory', 'requests.cpu', 'requests.ephemeral-storage', 'requests.memory'];

/** ValidateEnv. */
function envErrors(path: string, env: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  env.forEach((e, i) => {
    const ev = obj(e) ?? {};
    const p = `${path}[${i}]`;
    const name = str(ev['name']);
    if (name === '') errs.push(fieldErr.required(`${p}.name`));
    else errs.push(...envNameErrors(`${p}.name`, name));
    const from = obj(ev['valueFrom']);
    if (!from) return;
    const fp = `${p}.valueFrom`;
    let sources = 0;
    const ref = obj(from['fieldRef']);
    if (ref) {
      sources++;
      errs.push(...fieldRefErrors(`${fp}.fieldRef`, ref));
    }
    const res = obj(from['resourceFieldRef']);
    if (res) {
      sources++;
      const r = str(res['resource']);
      if (r === '') errs.push(fieldErr.required(`${fp}.resourceFieldRef.resource`));
      else if (!RESOURCE_FIELDS.includes(r) && !/^(requests|limits)\.hugepages-/.test(r)) errs.push(fieldErr.notSupported(`${fp}.resourceFieldRef.resource`, r, RESOURCE_FIELDS));
    }
    for (const k of ['configMapKeyRef', 'secretKeyRef']) {
      const sel = obj(from[k]);
      if (!sel) continue;
      sources++;
      errs.push(...nameErrors(`${fp}.${k}.name`, 'subdomain', str(sel['name'])));
      const key = str(sel['key']);
      if (key === '') errs.push(fieldErr.required(`${fp}.${k}.key`));
      else if (!/^[-._a-zA-Z0-9]+$/.test(key)) errs.push(fieldErr.invalid(`${fp}.${k}.key`, key, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"));
      else if (key.length > 253) errs.push(fieldErr.invalid(`${fp}.${k}.key`, key, 'must be no more than 253 characters'));
      else if (key === '.' || key === '..' || key.startsWith('..')) errs.push(fieldErr.invalid(`${fp}.${k}.key`, key, key === '.' ? "must not be '.'" : key === '..' ? "must not be '..'" : "must not start with '..'"));
    }
    if (sources === 0) errs.push(fieldErr.invalid(fp, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'));
    else if (str(ev['value']) !== '') errs.push(fieldErr.invalid(fp, '', 'may not be specified when `value` is not empty'));
    else if (sources > 1) errs.push(fieldErr.invalid(fp, '', 'may not have more than one field specified at a time'));
  });
  return errs;
}

/** validateObjectFieldSelector for env (v1 field labels). */
function fieldRefErrors(path: string, ref: O): FieldError[] {
  // Absent is the default (v1): objects stored before that default existed are read as upstream reads them, defaulted.
  if (ref['apiVersion'] === '') return [fieldErr.required(`${path}.apiVersion`)];
  const fp = str(ref['fieldPath']);
  if (fp === '') return [fieldErr.required(`${path}.fieldPath`)];
  const m = /^(metadata\.(?:annotations|labels))\['(.*)'\]$/.exec(fp);
  const base = m ? m[1]! : fp;
  if (!POD_FIELD_LABELS.has(base) || (m === null && fp.includes('['))) return [fieldErr.invalid(`${path}.fieldPath`, fp, `error converting fieldPath: field label not supported: ${fp}`)];
  if (m) return qualifiedNameErrors(path, base === 'metadata.annotations' ? m[2]!.toLowerCase() : m[2]!);
  if (!ENV_FIELD_PATHS.includes(fp)) return [fieldErr.notSupported(`${path}.fieldPath`, fp, ENV_FIELD_PATHS)];
  return [];
}

/** ValidateEnvFrom. */
function envFromErrors(path: string, from: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  from.forEach((f, i) => {
    const src = obj(f) ?? {};
    const p = `${path}[${i}]`;
    if (!blank(src['prefix'])) errs.push(...envNameErrors(`${p}.prefix`, str(src['prefix'])));
    let sources = 0;
    for (const k of ['configMapRef', 'secretRef']) {
      const ref = obj(src[k]);
      if (!ref) continue;
      sources++;
      const name = str(ref['name']);
      if (name === '') errs.push(fieldErr.required(`${p}.${k}.name`));
      else errs.push(...nameErrors(`${p}.${k}.name`, 'subdomain', name));
    }
    if (sources === 0) errs.push(fieldErr.invalid(path, '', 'must specify one of: `configMapRef` or `secretRef`'));
    else if (sources > 1) errs.push(fieldErr.invalid(path, '', 'may not have more than one field specified at a time'));
  });
  return errs;
}

/** validateResourceRequirements for a container. */
function resourcesErrors(path: string, res: O): FieldError[] {
  const errs: FieldError[] = [];
  const limits = obj(res['limits']) ?? {};
  const requests = obj(res['requests']) ?? {};
  let cpuOrMemory = false;
  let hugePages = false;
  for (const [name, q] of Object.entries(limits)) {
    const p = `${path}.limits[${name}]`;
    errs.push(...containerResourceNameErrors(p, name), ...quantityErrors(p, name, q));
    if (isHugePages(name)) hugePages = true;
    if (name === 'cpu' || name === 'memory') cpuOrMemory = true;
  }
  for (const [name, q] of Object.entries(requests)) {
    const p = `${path}.requests[${name}]`;
    errs.push(...containerResourceNameErrors(p, name), ...quantityErrors(p, name, q));
    const req = quantityNanos(q);
    if (name in limits) {
      const lim = quantityNanos(limits[name]);
      if (req !== null && lim !== null) {
        if (req !== lim && !overcommits(name)) errs.push(fieldErr.invalid(`${path}.requests`, quantityString(q), `must be equal to ${name} limit of ${quantityString(limits[name])}`));
        else if (req > lim) errs.push(fieldErr.invalid(`${path}.requests`, quantityString(q), `must be less than or equal to ${name} limit of ${quantityString(limits[name])}`));
      }
    } else if (!overcommits(name)) errs.push(fieldErr.required(`${path}.limits`, 'Limit must be set for non overcommitable resources'));
    if (isHugePages(name)) hugePages = true;
    if (name === 'cpu' || name === 'memory') cpuOrMemory = true;
  }
  if (hugePages && !cpuOrMemory) errs.push(fieldErr.forbidden(path, 'HugePages require cpu or memory'));
  return errs;
}

const HEADER_TEXT = "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')";

/** validateHandler (probes: exec, httpGet, tcpSocket, grpc; lifecycle: exec, httpGet, tcpSocket, sleep). */
function handlerErrors(path: string, h: O, grace: number | null, kinds: readonly string[]): FieldError[] {
  const errs: FieldError[] = [];
  let n = 0;
  for (const k of kinds) {
    const a = obj(h[k]);
    if (!a) continue;
    if (n > 0) {
      errs.push(fieldErr.forbidden(`${path}.${k}`, 'may not specify more than 1 handler type'));
      continue;
    }
    n++;
    const p = `${path}.${k}`;
    if (k === 'exec' && arr(a['command']).length === 0) errs.push(fieldErr.required(`${p}.command`));
    if (k === 'httpGet') {
      if (a['path'] === '') errs.push(fieldErr.required(`${p}.path`));
      errs.push(...portNumOrNameErrors(`${p}.port`, a['port']));
      if (a['scheme'] !== undefined && a['scheme'] !== 'HTTP' && a['scheme'] !== 'HTTPS') errs.push(fieldErr.notSupported(`${p}.scheme`, a['scheme'] ?? '', ['HTTP', 'HTTPS']));
      for (const hd of arr(a['httpHeaders'])) {
        const name = str(obj(hd)?.['name']);
        if (!/^[-A-Za-z0-9]+$/.test(name)) errs.push(fieldErr.invalid(`${p}.httpHeaders`, name, HEADER_TEXT));
      }
    }
    if (k === 'tcpSocket') errs.push(...portNumOrNameErrors(`${p}.port`, a['port']));
    if (k === 'grpc') errs.push(...portNumErrors(`${p}.port`, a['port'] ?? 0));
    if (k === 'sleep') {
      const s = num(a['seconds']);
      if (grace !== null && (s <= 0 || s > grace)) errs.push(fieldErr.invalid(p, s, `must be greater than 0 and less than terminationGracePeriodSeconds (${grace}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.`));
    }
  }
  if (n === 0) errs.push(fieldErr.required(path, 'must specify a handler type'));
  return errs;
}

/** validateLivenessProbe / validateReadinessProbe / validateStartupProbe. */
function probeErrors(path: string, v: unknown, grace: number | null, kind: 'liveness' | 'readiness' | 'startup'): FieldError[] {
  const pr = obj(v);
  if (!pr) return [];
  const errs = handlerErrors(path, pr, grace, ['exec', 'httpGet', 'tcpSocket', 'grpc']);
  for (const k of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold']) errs.push(...nonNegative(`${path}.${k}`, pr[k]));
  const tgp = pr['terminationGracePeriodSeconds'];
  if (typeof tgp === 'number' && tgp <= 0) errs.push(fieldErr.invalid(`${path}.terminationGracePeriodSeconds`, tgp, 'must be greater than 0'));
  const st = pr['successThreshold'] || 1;
  if (kind !== 'readiness' && st !== 1) errs.push(fieldErr.invalid(`${path}.successThreshold`, st, 'must be 1'));
  if (kind === 'readiness' && isSet(tgp)) errs.push(fieldErr.invalid(`${path}.terminationGracePeriodSeconds`, tgp, 'must not be set for readinessProbes'));
  return errs;
}

function lifecycleErrors(path: string, lc: O, grace: number | null): FieldError[] {
  const errs: FieldError[] = [];
  for (const k of ['postStart', 'preStop']) {
    const h = obj(lc[k]);
    if (h) errs.push(...handlerErrors(`${path}.${k}`, h, grace, ['exec', 'httpGet', 'tcpSocket', 'sleep']));
  }
  return errs;
}

/** ValidateNodeSelectorRequirement / ValidateNodeFieldSelectorRequirement / ValidateNodeSelectorTerm. */
function nodeSelectorTermErrors(path: string, term: O, checkValues: boolean): FieldError[] {
  const errs: FieldError[] = [];
  arr(term['matchExpressions']).forEach((r, j) => {
    const rq = obj(r) ?? {};
    const p = `${path}.matchExpressions[${j}]`;
    const values = arr(rq['values']);
    errs.push(...operatorErrors(p, rq['operator'], values, true));
    errs.push(...qualifiedNameErrors(`${p}.key`, rq['key']));
    if (checkValues) values.forEach((v, k) => errs.push(...labelValueErrors(`${p}.values[${k}]`, v)));
  });
  arr(term['matchFields']).forEach((r, j) => {
    const rq = obj(r) ?? {};
    const p = `${path}.matchFields[${j}]`;
    if (rq['operator'] === 'In' || rq['operator'] === 'NotIn') {
      if (arr(rq['values']).length !== 1) errs.push(fieldErr.required(`${p}.values`, "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"));
    } else errs.push(fieldErr.invalid(`${p}.operator`, rq['operator'] ?? '', 'not a valid selector operator'));
    if (rq['key'] !== 'metadata.name') errs.push(fieldErr.invalid(`${p}.key`, rq['key'] ?? '', 'not a valid field selector key'));
    else arr(rq['values']).forEach((v, k) => errs.push(...nameErrors(`${p}.values[${k}]`, 'subdomain', str(v))));
  });
  return errs;
}

/** validatePodAffinityTerm. */
function podAffinityTermErrors(path: string, term: O): FieldError[] {
  const errs = [...labelSelectorErrors(`${path}.labelSelector`, term['labelSelector']), ...labelSelectorErrors(`${path}.namespaceSelector`, term['namespaceSelector'])];
  for (const ns of arr(term['namespaces'])) errs.push(...nameErrors(`${path}.namespace`, 'label', str(ns)));
  if (blank(term['topologyKey'])) errs.push(fieldErr.required(`${path}.topologyKey`, 'can not be empty'));
  errs.push(...qualifiedNameErrors(`${path}.topologyKey`, term['topologyKey']));
  return errs;
}

/** validateAffinity. */
function affinityErrors(path: string, a: O | undefined): FieldError[] {
  if (!a) return [];
  const errs: FieldError[] = [];
  const na = obj(a['nodeAffinity']);
  if (na) {
    const req = obj(na['requiredDuringSchedulingIgnoredDuringExecution']);
    if (req) {
      const tp = `${path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`;
      const terms = arr(req['nodeSelectorTerms']);
      if (terms.length === 0) errs.push(fieldErr.required(tp, 'must have at least one node selector term'));
      terms.forEach((t, i) => errs.push(...nodeSelectorTermErrors(`${tp}[${i}]`, obj(t) ?? {}, true)));
    }
    arr(na['preferredDuringSchedulingIgnoredDuringExecution']).forEach((t, i) => {
      const term = obj(t) ?? {};
      const p = `${path}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
      const w = num(term['weight']);
      if (w <= 0 || w > 100) errs.push(fieldErr.invalid(`${p}.weight`, w, 'must be in the range 1-100'));
      errs.push(...nodeSelectorTermErrors(`${p}.preference`, obj(term['preference']) ?? {}, false));
    });
  }
  for (const k of ['podAffinity', 'podAntiAffinity']) {
    const pa = obj(a[k]);
    if (!pa) continue;
    arr(pa['requiredDuringSchedulingIgnoredDuringExecution']).forEach((t, i) => errs.push(...podAffinityTermErrors(`${path}.${k}.requiredDuringSchedulingIgnoredDuringExecution[${i}]`, obj(t) ?? {})));
    arr(pa['preferredDuringSchedulingIgnoredDuringExecution']).forEach((t, i) => {
      const wt = obj(t) ?? {};
      const p = `${path}.${k}.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
      const w = num(wt['weight']);
      if (w <= 0 || w > 100) errs.push(fieldErr.invalid(`${p}.weight`, w, 'must be in the range 1-100'));
      errs.push(...podAffinityTermErrors(`${p}.podAffinityTerm`, obj(wt['podAffinityTerm']) ?? {}));
    });
  }
  return errs;
}

/** validatePodDNSConfig. */
function dnsConfigErrors(path: string, cfg: unknown, policy: unknown): FieldError[] {
  const c = obj(cfg);
  if (policy === 'None') {
    if (!c) return [fieldErr.required(path, 'must provide `dnsConfig` when `dnsPolicy` is None')];
    if (arr(c['nameservers']).length === 0) return [fieldErr.required(`${path}.nameservers`, 'must provide at least one DNS nameserver when `dnsPolicy` is None')];
  }
  if (!c) return [];
  const errs: FieldError[] = [];
  const ns = arr(c['nameservers']);
  if (ns.length > 3) errs.push(fieldErr.invalid(`${path}.nameservers`, ns, 'must not have more than 3 nameservers'));
  ns.forEach((n, i) => errs.push(...ipErrors(`${path}.nameservers[${i}]`, n)));
  const searches = arr(c['searches']).map(str);
  if (searches.length > 32) errs.push(fieldErr.invalid(`${path}.searches`, searches, 'must not have more than 32 search paths'));
  if (searches.join(' ').length > 2048) errs.push(fieldErr.invalid(`${path}.searches`, searches, 'must not have more than 2048 characters (including spaces) in the search list'));
  searches.forEach((s, i) => errs.push(...nameErrors(`${path}.searches[${i}]`, 'subdomain', s.replace(/\.$/, ''))));
  arr(c['options']).forEach((o, i) => {
    if (blank(obj(o)?.['name'])) errs.push(fieldErr.required(`${path}.options[${i}]`, 'must not be empty'));
  });
  return errs;
}

/** validateTopologySpreadConstraints. */
function topologySpreadErrors(path: string, cs: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  const list = cs.map((c) => obj(c) ?? {});
  list.forEach((c, i) => {
    const p = `${path}[${i}]`;
    if (num(c['maxSkew']) <= 0) errs.push(fieldErr.invalid(`${p}.maxSkew`, num(c['maxSkew']), 'must be greater than zero'));
    if (blank(c['topologyKey'])) errs.push(fieldErr.required(`${p}.topologyKey`, 'can not be empty'));
    const when = c['whenUnsatisfiable'];
    if (when !== 'DoNotSchedule' && when !== 'ScheduleAnyway') errs.push(fieldErr.notSupported(`${p}.whenUnsatisfiable`, when ?? '', ['DoNotSchedule', 'ScheduleAnyway']));
    if (list.slice(i + 1).some((o) => o['topologyKey'] === c['topologyKey'] && o['whenUnsatisfiable'] === when)) {
      errs.push(fieldErr.duplicate(`${p}.{topologyKey, whenUnsatisfiable}`, `{${str(c['topologyKey'])}, ${str(when)}}`));
    }
    const md = c['minDomains'];
    if (isSet(md)) {
      if (num(md) <= 0) errs.push(fieldErr.invalid(`${p}.minDomains`, md, 'must be greater than zero'));
      if (when !== 'DoNotSchedule') errs.push(fieldErr.invalid(`${p}.minDomains`, md, `can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ${str(when)}`));
    }
    for (const k of ['nodeAffinityPolicy', 'nodeTaintsPolicy']) {
      if (isSet(c[k]) && c[k] !== 'Honor' && c[k] !== 'Ignore') errs.push(fieldErr.notSupported(`${p}.${k}`, c[k], ['Honor', 'Ignore']));
    }
    errs.push(...labelSelectorErrors(`${p}.labelSelector`, c['labelSelector']));
  });
  return errs;
}

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** ValidateTolerations. */
export function tolerationsErrors(path: string, ts: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  ts.forEach((t, i) => {
    const tol = obj(t) ?? {};
    const p = `${path}[${i}]`;
    const key = str(tol['key']);
    const op = str(tol['operator']);
    if (key !== '') errs.push(...qualifiedNameErrors(`${p}.key`, key));
    if (key === '' && op !== 'Exists') errs.push(fieldErr.invalid(`${p}.operator`, op, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    if (isSet(tol['tolerationSeconds']) && tol['effect'] !== 'NoExecute') errs.push(fieldErr.invalid(`${p}.effect`, str(tol['effect']), "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    if (op === 'Equal' || op === '') {
      const vp = labelValueProblem(str(tol['value']));
      if (vp) errs.push(fieldErr.invalid(`${p}.operator`, str(tol['value']), vp.split('; ').join(';')));
    } else if (op === 'Exists') {
      if (str(tol['value']) !== '') errs.push(fieldErr.invalid(`${p}.operator`, str(tol['value']), "value must be empty when `operator` is 'Exists'"));
    } else errs.push(fieldErr.notSupported(`${p}.operator`, op, ['Equal', 'Exists']));
    const effect = str(tol['effect']);
    if (effect !== '' && !TAINT_EFFECTS.includes(effect)) errs.push(fieldErr.notSupported(`${p}.effect`, effect, TAINT_EFFECTS));
  });
  return errs;
}

/** ValidatePodTemplateSpec: the template's labels and annotations (at upstream's paths), its spec, no ephemeral containers. */
export function podTemplateErrors(path: string, tpl: O): FieldError[] {
  const meta = obj(tpl['metadata']) ?? {};
  const errs = labelsErrors(`${path}.labels`, meta['labels']);
  for (const k of Object.keys(obj(meta['annotations']) ?? {})) errs.push(...qualifiedNameErrors(`${path}.annotations`, k.toLowerCase()));
  errs.push(...validatePodSpec(`${path}.spec`, obj(tpl['spec']) ?? {}, false));
  if (arr(obj(tpl['spec'])?.['ephemeralContainers']).length > 0) errs.push(fieldErr.forbidden(`${path}.spec.ephemeralContainers`, 'ephemeral containers not allowed in pod template'));
  return errs;
}

