/**
 * controlplane/kinds/volumes: a pod spec's volumes and its containers'
 * volumeMounts and volumeDevices as kube-apiserver validates them
 * (pkg/apis/core/validation: ValidateVolumes, validateVolumeSource and its
 * per-source validators, ValidateVolumeMounts, ValidateVolumeDevices, the
 * ephemeral containers' subPath rule). podspec.ts calls it where upstream's
 * ValidatePodSpec and validateContainerCommon do. Pure.
 *
 * Every volume type upstream's API accepts is accepted here, with its
 * required fields checked as upstream checks them, whether or not nodenet's
 * kubelet can run it (the kubelet refuses what it cannot honour; see
 * podspec.ts). Upstream's field paths are kept, quirks included
 * (`gcePersistentDisk`'s fields under `persistentDisk`, `downwarAPI` in the
 * one-volume-type error, a mount's subPath errors under `volumeMounts.subPath`
 * without its index, a projected token's path under `projected.path`).
 *
 * Fields the API defaults are judged at their default when absent, as a spec
 * stored before a default existed is read (SetDefaults_Volume makes a volume
 * without a source an emptyDir, a token projection's expirationSeconds is
 * 3600, a downward API fieldRef's apiVersion v1, an image volume's
 * pullPolicy follows its tag, an azureDisk's kind is Shared). The defaults
 * are not written into stored objects (a Deployment's template hash would
 * change under it).
 *
 * Left out: the checks that need the Pod's name (a generic ephemeral
 * volume's PVC name `<pod>-<volume>` and a persistentVolumeClaim naming it),
 * an ephemeral volume's claim template dataSource/dataSourceRef, and the
 * podCertificate projection (alpha, dropped upstream while its gate is off).
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelKeyProblem } from '../api/selectors.js';
import { arr, blank, isSet, labelSelectorErrors, labelsErrors, nameErrors, nameProblems, num, type O, obj, QUANTITY_REGEX_TEXT, quantityNanos, quantityString, qualifiedNameErrors, str } from './common.js';

/** The volumes that validated, by name: what mounts and devices may name (upstream's `vols` map). */
export type VolumeMap = ReadonlyMap<string, O>;

const FILE_MODE_TEXT = 'must be a number between 0 and 0777 (octal), both inclusive';
const ONE_TYPE = 'may not specify more than 1 volume type';

const notFound = (field: string, value: unknown): FieldError => ({ reason: 'FieldValueNotFound', field, message: `Not found: ${JSON.stringify(value ?? '')}` });
const required = (o: O, k: string, path: string): FieldError[] => (blank(o[k]) ? [fieldErr.required(`${path}.${k}`)] : []);

/** A file mode (defaultMode, mode): 0 to 0777 when set. */
function modeErrors(path: string, v: unknown): FieldError[] {
  if (!isSet(v)) return [];
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0o777 ? [] : [fieldErr.invalid(path, v, FILE_MODE_TEXT)];
}

/** validatePathNoBacksteps: no `..` element. */
function noBackstepsErrors(path: string, p: string): FieldError[] {
  return p.split('/').includes('..') ? [fieldErr.invalid(path, p, "must not contain '..'")] : [];
}

/** validateLocalDescendingPath: relative, no `..` element. */
export function localDescendingErrors(path: string, p: string): FieldError[] {
  const errs = p.startsWith('/') ? [fieldErr.invalid(path, p, 'must be a relative path')] : [];
  return [...errs, ...noBackstepsErrors(path, p)];
}

/** ValidateLocalNonReservedPath: a local descending path that does not start with `..`. */
export function localNonReservedErrors(path: string, p: string): FieldError[] {
  const errs = localDescendingErrors(path, p);
  if (p.startsWith('..') && !p.startsWith('../')) errs.push(fieldErr.invalid(path, p, "must not start with '..'"));
  return errs;
}

/** validateKeyToPath. */
function keyToPathErrors(path: string, kp: O): FieldError[] {
  const p = str(kp['path']);
  return [...required(kp, 'key', path), ...required(kp, 'path', path), ...localNonReservedErrors(`${path}.path`, p), ...modeErrors(`${path}.mode`, kp['mode'])];
}

/** validateSecretVolumeSource / validateConfigMapVolumeSource. */
function keysVolumeErrors(path: string, s: O, nameKey: 'secretName' | 'name'): FieldError[] {
  const errs = [...required(s, nameKey, path), ...modeErrors(`${path}.defaultMode`, s['defaultMode'])];
  arr(s['items']).forEach((it, i) => errs.push(...keyToPathErrors(`${path}.items[${i}]`, obj(it) ?? {})));
  return errs;
}

const POD_FIELD_LABELS = new Set(['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.restartPolicy', 'spec.serviceAccountName', 'spec.schedulerName', 'status.phase', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs']);
const VOLUME_FIELD_PATHS = ['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid'];

/** fieldpath.SplitMaybeSubscriptedPath. */
function splitSubscript(fp: string): [string, string] | null {
  if (!fp.endsWith("']")) return null;
  const s = fp.slice(0, -2);
  const at = s.indexOf("['");
  if (at <= 0) return null;
  return [s.slice(0, at), s.slice(at + 2)];
}

/** validateObjectFieldSelector with a downward API volume's expressions (apiVersion absent or empty is its default, v1). */
function volumeFieldRefErrors(path: string, ref: O): FieldError[] {
  const version = blank(ref['apiVersion']) ? 'v1' : str(ref['apiVersion']);
  const fp = str(ref['fieldPath']);
  if (fp === '') return [fieldErr.required(`${path}.fieldPath`)];
  // podshelper.ConvertDownwardAPIFieldLabel
  let internal = fp;
  let problem: string | null = null;
  const sub = splitSubscript(fp);
  if (version !== 'v1') problem = `unsupported pod version: ${version}`;
  else if (sub) {
    if (sub[0] !== 'metadata.annotations' && sub[0] !== 'metadata.labels') problem = `field label does not support subscript: ${fp}`;
  } else if (fp === 'spec.host') internal = 'spec.nodeName';
  else if (!POD_FIELD_LABELS.has(fp)) problem = `field label not supported: ${fp}`;
  if (problem) return [fieldErr.invalid(`${path}.fieldPath`, fp, `error converting fieldPath: ${problem}`)];
  if (sub) return qualifiedNameErrors(path, sub[0] === 'metadata.annotations' ? sub[1].toLowerCase() : sub[1]);
  return VOLUME_FIELD_PATHS.includes(internal) ? [] : [fieldErr.notSupported(`${path}.fieldPath`, internal, VOLUME_FIELD_PATHS)];
}

const RESOURCE_FIELD_PATHS = ['limits.cpu', 'limits.ephemeral-storage', 'limits.memory', 'requests.cpu', 'requests.ephemeral-storage', 'requests.memory'];
const BYTE_DIVISORS = ['1', '1k', '1M', '1G', '1T', '1P', '1E', '1Ki', '1Mi', '1Gi', '1Ti', '1Pi', '1Ei'];

/** validateContainerResourceFieldSelector for a volume (containerName required) and validateContainerResourceDivisor. */
function volumeResourceFieldErrors(path: string, ref: O): FieldError[] {
  const errs: FieldError[] = [];
  const resource = str(ref['resource']);
  if (blank(ref['containerName'])) errs.push(fieldErr.required(`${path}.containerName`));
  else if (resource === '') errs.push(fieldErr.required(`${path}.resource`));
  else if (!RESOURCE_FIELD_PATHS.includes(resource) && !resource.startsWith('requests.hugepages-') && !resource.startsWith('limits.hugepages-')) {
    errs.push(fieldErr.notSupported(`${path}.resource`, resource, RESOURCE_FIELD_PATHS));
  }
  const d = ref['divisor'];
  const nanos = isSet(d) ? quantityNanos(d) : 0n;
  if (nanos === null) return [...errs, fieldErr.invalid(`${path}.divisor`, d, QUANTITY_REGEX_TEXT)];
  if (nanos === 0n) return errs;
  const divisor = quantityString(d);
  const bad = (text: string) => fieldErr.invalid(`${path}.divisor`, resource, text);
  const bytesText = (what: string) => `only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the ${what}`;
  if ((resource === 'limits.cpu' || resource === 'requests.cpu') && divisor !== '1m' && divisor !== '1') errs.push(bad("only divisor's values 1m and 1 are supported with the cpu resource"));
  if ((resource === 'limits.memory' || resource === 'requests.memory') && !BYTE_DIVISORS.includes(divisor)) errs.push(bad(bytesText('memory resource')));
  if ((resource === 'limits.ephemeral-storage' || resource === 'requests.ephemeral-storage') && !BYTE_DIVISORS.includes(divisor)) errs.push(bad(bytesText('local ephemeral storage resource')));
  if ((resource.startsWith('requests.hugepages-') || resource.startsWith('limits.hugepages-')) && !BYTE_DIVISORS.includes(divisor)) errs.push(bad(bytesText('hugepages resource')));
  return errs;
}

/** validateDownwardAPIVolumeFile (`path` is the volume's or projection's, not the item's: upstream's paths). */
function downwardFileErrors(path: string, f: O): FieldError[] {
  const errs = [...required(f, 'path', path), ...localNonReservedErrors(`${path}.path`, str(f['path']))];
  const fr = obj(f['fieldRef']);
  const rr = obj(f['resourceFieldRef']);
  if (fr) {
    errs.push(...volumeFieldRefErrors(`${path}.fieldRef`, fr));
    if (rr) errs.push(fieldErr.invalid(path, 'resource', 'fieldRef and resourceFieldRef can not be specified simultaneously'));
  } else if (rr) errs.push(...volumeResourceFieldErrors(`${path}.resourceFieldRef`, rr));
  else errs.push(fieldErr.required(path, 'one of fieldRef and resourceFieldRef is required'));
  return [...errs, ...modeErrors(`${path}.mode`, f['mode'])];
}

/** validateDownwardAPIVolumeSource. */
function downwardAPIErrors(path: string, s: O): FieldError[] {
  const errs = modeErrors(`${path}.defaultMode`, s['defaultMode']);
  for (const f of arr(s['items'])) errs.push(...downwardFileErrors(path, obj(f) ?? {}));
  return errs;
}

/** ValidateSignerName (certificates). */
function signerNameErrors(path: string, signer: string): FieldError[] {
  if (signer === '') return [fieldErr.required(path)];
  const segments = signer.split('/');
  if (segments.length !== 2) return [fieldErr.invalid(path, signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
  const [domain, rest] = segments as [string, string];
  const errs: FieldError[] = [];
  if (domain.length > 253) errs.push(fieldErr.tooLong(path, 253));
  const labels = domain.split('.');
  for (const l of labels) {
    const problems = nameProblems('label', l);
    if (problems.length) {
      for (const p of problems) errs.push(fieldErr.invalid(path, domain, `validating label ${JSON.stringify(l)}: ${p}`));
      break;
    }
  }
  if (labels.length < 2) errs.push(fieldErr.invalid(path, domain, 'should be a domain with at least two segments separated by dots'));
  for (const l of rest.split('.')) {
    const problems = nameProblems('subdomain', l);
    if (problems.length) {
      for (const p of problems) errs.push(fieldErr.invalid(path, rest, `validating label ${JSON.stringify(l)}: ${p}`));
      break;
    }
  }
  const max = 253 + (253 + 63 + 1) + 1;
  if (signer.length > max) errs.push(fieldErr.tooLong(path, max));
  return errs;
}

/** ValidateClusterTrustBundleName(signerName)(name): the problems of a ClusterTrustBundle's name. */
function trustBundleNameProblems(signer: string, name: string): string[] {
  if (signer === '') return name.includes(':') ? ['ClusterTrustBundle without signer name must not have ":" in its name'] : nameProblems('subdomain', name);
  const prefix = `${signer.replaceAll('/', ':')}:`;
  if (!name.startsWith(prefix)) return [`ClusterTrustBundle for signerName ${signer} must be named with prefix ${prefix}`];
  return nameProblems('subdomain', name.slice(prefix.length));
}

/** validateProjectedVolumeSource and validateProjectionSources. */
function projectedErrors(path: string, s: O): FieldError[] {
  const errs = modeErrors(`${path}.defaultMode`, s['defaultMode']);
  const paths = new Set<string>();
  /** A path a source writes: a second source writing it conflicts. */
  const claim = (p: string, shown: unknown) => {
    if (paths.has(p)) errs.push(fieldErr.invalid(path, shown, 'conflicting duplicate paths'));
    else paths.add(p);
  };
  arr(s['sources']).forEach((x, i) => {
    const src = obj(x) ?? {};
    const sp = `${path}.sources[${i}]`;
    let n = 0;
    for (const kind of ['secret', 'configMap'] as const) {
      const ks = obj(src[kind]);
      if (!ks) continue;
      n++;
      const kp = `${sp}.${kind}`;
      errs.push(...required(ks, 'name', kp));
      arr(ks['items']).forEach((it, j) => {
        const item = obj(it) ?? {};
        errs.push(...keyToPathErrors(`${kp}.items[${j}]`, item));
        if (str(item['path']) !== '') claim(str(item['path']), str(ks['name']));
      });
    }
    const dw = obj(src['downwardAPI']);
    if (dw) {
      n++;
      for (const f of arr(dw['items'])) {
        const file = obj(f) ?? {};
        errs.push(...downwardFileErrors(`${sp}.downwardAPI`, file));
        if (str(file['path']) !== '') claim(str(file['path']), str(file['path']));
      }
    }
    const tok = obj(src['serviceAccountToken']);
    if (tok) {
      n++;
      const tp = `${sp}.serviceAccountToken`;
      // SetDefaults_ServiceAccountTokenProjection: absent is 3600 s.
      const exp = isSet(tok['expirationSeconds']) ? num(tok['expirationSeconds']) : 3600;
      if (exp < 600) errs.push(fieldErr.invalid(`${tp}.expirationSeconds`, exp, 'may not specify a duration less than 10 minutes'));
      if (exp > 2 ** 32) errs.push(fieldErr.invalid(`${tp}.expirationSeconds`, exp, 'may not specify a duration larger than 2^32 seconds'));
      // Upstream reports the token's path at the projected volume's path.
      if (str(tok['path']) === '') errs.push(fieldErr.required(`${path}.path`));
      else errs.push(...localNonReservedErrors(`${path}.path`, str(tok['path'])));
    }
    const ctb = obj(src['clusterTrustBundle']);
    if (ctb) {
      n++;
      errs.push(...trustBundleErrors(`${sp}.clusterTrustBundle`, ctb));
      claim(str(ctb['path']), str(ctb['path']));
    }
    if (n > 1) errs.push(fieldErr.forbidden(sp, 'may not specify more than 1 volume type per source'));
  });
  return errs;
}

/** The clusterTrustBundle projection's rules in validateProjectionSources. */
function trustBundleErrors(cp: string, ctb: O): FieldError[] {
  const errs: FieldError[] = [];
  const usingName = isSet(ctb['name']);
  const usingSigner = isSet(ctb['signerName']);
  if (usingName && usingSigner) errs.push(fieldErr.invalid(cp, ctb, 'only one of name and signerName may be used'));
  else if (usingName) {
    const name = str(ctb['name']);
    if (name === '') errs.push(fieldErr.required(`${cp}.name`, 'must be a valid object name'));
    const colon = name.lastIndexOf(':');
    const signer = colon === -1 ? '' : name.slice(0, colon).replaceAll(':', '/');
    for (const m of trustBundleNameProblems(signer, name)) errs.push(fieldErr.invalid(`${cp}.name`, name, `not a valid clustertrustbundlename: ${m}`));
    if (isSet(ctb['labelSelector'])) errs.push(fieldErr.invalid(`${cp}.labelSelector`, ctb['labelSelector'], 'labelSelector must be unset if name is specified'));
  } else if (usingSigner) {
    const signer = str(ctb['signerName']);
    if (signer === '') errs.push(fieldErr.required(`${cp}.signerName`, 'must be a valid signer name'));
    errs.push(...signerNameErrors(`${cp}.signerName`, signer));
    errs.push(...labelSelectorErrors(`${cp}.labelSelector`, ctb['labelSelector']));
  } else errs.push(fieldErr.required(cp, 'either name or signerName must be specified'));
  const p = str(ctb['path']);
  if (p === '') errs.push(fieldErr.required(`${cp}.path`));
  return [...errs, ...localNonReservedErrors(`${cp}.path`, p)];
}

const HOST_PATH_TYPES = ['', 'BlockDevice', 'CharDevice', 'Directory', 'DirectoryOrCreate', 'File', 'FileOrCreate', 'Socket'];

/** validateHostPathVolumeSource and validateHostPathType. */
function hostPathErrors(path: string, s: O): FieldError[] {
  const p = str(s['path']);
  if (p === '') return [fieldErr.required(`${path}.path`)];
  const errs = noBackstepsErrors(`${path}.path`, p);
  const t = s['type'];
  if (isSet(t) && !(typeof t === 'string' && HOST_PATH_TYPES.includes(t))) errs.push(fieldErr.notSupported(`${path}.type`, t, HOST_PATH_TYPES));
  return errs;
}

/** validateEmptyDirVolumeSource's one rule: sizeLimit not negative. */
function emptyDirErrors(path: string, s: O): FieldError[] {
  const size = s['sizeLimit'];
  if (!isSet(size)) return [];
  const n = quantityNanos(size);
  if (n === null) return [fieldErr.invalid(`${path}.sizeLimit`, size, QUANTITY_REGEX_TEXT)];
  return n < 0n ? [fieldErr.forbidden(`${path}.sizeLimit`, 'SizeLimit field must be a valid resource quantity')] : [];
}

/** validateNFSVolumeSource. */
function nfsErrors(path: string, s: O): FieldError[] {
  const p = str(s['path']);
  const errs = [...required(s, 'server', path), ...required(s, 'path', path)];
  if (!p.startsWith('/')) errs.push(fieldErr.invalid(`${path}.path`, p, 'must be an absolute path'));
  return errs;
}

const IQN = /iqn\.\d{4}-\d{2}\.([A-Za-z0-9\-.]+)(:[^,;*&$|\s]+)$/;
const EUI = /^eui.[A-Za-z0-9]{16}$/;
const NAA = /^naa.[A-Za-z0-9]{32}$/;

/** The iqn/eui/naa format of an iSCSI name (the messages after "must be valid format starting with..."). */
function iscsiNameFormatBad(v: string): boolean {
  return (v.startsWith('iqn') && !IQN.test(v)) || (v.startsWith('eui') && !EUI.test(v)) || (v.startsWith('naa') && !NAA.test(v));
}
const iscsiPrefixed = (v: string): boolean => v.startsWith('iqn') || v.startsWith('eui') || v.startsWith('naa');

/** validateISCSIVolumeSource (and the volume name's length with an initiatorName). */
function iscsiErrors(path: string, s: O, volPath: string, volName: string): FieldError[] {
  const errs = required(s, 'targetPortal', path);
  const iqn = str(s['iqn']);
  if (iqn === '') errs.push(fieldErr.required(`${path}.iqn`));
  else if (!iscsiPrefixed(iqn)) errs.push(fieldErr.invalid(`${path}.iqn`, iqn, 'must be valid format starting with iqn, eui, or naa'));
  else if (iscsiNameFormatBad(iqn)) errs.push(fieldErr.invalid(`${path}.iqn`, iqn, 'must be valid format'));
  const lun = num(s['lun']);
  if (lun < 0 || lun > 255) errs.push(fieldErr.invalid(`${path}.lun`, lun, 'must be between 0 and 255, inclusive'));
  if ((s['chapAuthDiscovery'] === true || s['chapAuthSession'] === true) && !isSet(s['secretRef'])) errs.push(fieldErr.required(`${path}.secretRef`));
  if (isSet(s['initiatorName'])) {
    const ini = str(s['initiatorName']);
    if (!iscsiPrefixed(ini)) errs.push(fieldErr.invalid(`${path}.initiatorname`, ini, 'must be valid format starting with iqn, eui, or naa'));
    if (iscsiNameFormatBad(ini)) errs.push(fieldErr.invalid(`${path}.initiatorname`, ini, 'must be valid format'));
    if (`${volName}:${str(s['targetPortal'])}`.length > 64) {
      errs.push(fieldErr.invalid(`${volPath}.name`, volName, 'Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.'));
    }
  }
  return errs;
}

/** validateFCVolumeSource. */
function fcErrors(path: string, s: O): FieldError[] {
  const errs: FieldError[] = [];
  const wwns = arr(s['targetWWNs']);
  const wwids = arr(s['wwids']);
  if (wwns.length < 1 && wwids.length < 1) errs.push(fieldErr.required(`${path}.targetWWNs`, 'must specify either targetWWNs or wwids, but not both'));
  if (wwns.length && wwids.length) errs.push(fieldErr.invalid(`${path}.targetWWNs`, wwns, 'targetWWNs and wwids can not be specified simultaneously'));
  if (wwns.length) {
    if (!isSet(s['lun'])) errs.push(fieldErr.required(`${path}.lun`, 'lun is required if targetWWNs is specified'));
    else if (num(s['lun']) < 0 || num(s['lun']) > 255) errs.push(fieldErr.invalid(`${path}.lun`, s['lun'], 'must be between 0 and 255, inclusive'));
  }
  return errs;
}

/** validateFlockerVolumeSource. */
function flockerErrors(path: string, s: O): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(s['datasetName']);
  const uuid = str(s['datasetUUID']);
  if (name === '' && uuid === '') errs.push(fieldErr.required(path, 'one of datasetName and datasetUUID is required'));
  if (name !== '' && uuid !== '') errs.push(fieldErr.invalid(path, 'resource', 'datasetName and datasetUUID can not be specified simultaneously'));
  if (name.includes('/')) errs.push(fieldErr.invalid(`${path}.datasetName`, name, "must not contain '/'"));
  return errs;
}

/** validateQuobyteVolumeSource (net.SplitHostPort's acceptance, roughly: one colon, or a bracketed host). */
function quobyteErrors(path: string, s: O): FieldError[] {
  const errs: FieldError[] = [];
  const registry = str(s['registry']);
  const text = 'must be a host:port pair or multiple pairs separated by commas';
  if (registry === '') errs.push(fieldErr.required(`${path}.registry`, text));
  else if (str(s['tenant']).length >= 65) errs.push(fieldErr.required(`${path}.tenant`, 'must be a UUID and may not exceed a length of 64 characters'));
  else {
    for (const pair of registry.split(',')) {
      const ok = pair.startsWith('[') ? /^\[[^\][]*\]:[^:[\]]*$/.test(pair) : pair.split(':').length === 2 && !/[[\]]/.test(pair);
      if (!ok) errs.push(fieldErr.invalid(`${path}.registry`, registry, text));
    }
  }
  return [...errs, ...required(s, 'volume', path)];
}

/** validateFlexVolumeSource. */
function flexErrors(path: string, s: O): FieldError[] {
  const errs = required(s, 'driver', path);
  for (const k of Object.keys(obj(s['options']) ?? {})) {
    const i = k.indexOf('/');
    const ns = `.${(i === -1 ? k : k.slice(0, i)).toLowerCase()}`;
    if (ns.endsWith('.kubernetes.io') || ns.endsWith('.k8s.io')) errs.push(fieldErr.invalid(`${path}.options[${k}]`, k, 'kubernetes.io and k8s.io namespaces are reserved'));
  }
  return errs;
}

/** validateAzureDisk (an absent kind is its default, Shared). */
function azureDiskErrors(path: string, s: O): FieldError[] {
  const errs = [...required(s, 'diskName', path), ...required(s, 'diskURI', path)];
  const caching = s['cachingMode'];
  if (isSet(caching) && !['None', 'ReadOnly', 'ReadWrite'].includes(str(caching))) errs.push(fieldErr.notSupported(`${path}.cachingMode`, caching, ['None', 'ReadOnly', 'ReadWrite']));
  const kind = isSet(s['kind']) ? s['kind'] : 'Shared';
  if (!['Dedicated', 'Managed', 'Shared'].includes(str(kind))) errs.push(fieldErr.notSupported(`${path}.kind`, kind, ['Dedicated', 'Managed', 'Shared']));
  const uri = str(s['diskURI']);
  if (kind === 'Managed' && !uri.startsWith('/subscriptions/')) errs.push(fieldErr.notSupported(`${path}.diskURI`, uri, ['/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}']));
  if (kind !== 'Managed' && !uri.startsWith('https://')) errs.push(fieldErr.notSupported(`${path}.diskURI`, uri, ['https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd']));
  return errs;
}

/** validateStorageOSVolumeSource. */
function storageOSErrors(path: string, s: O): FieldError[] {
  const name = str(s['volumeName']);
  const errs = name === '' ? [fieldErr.required(`${path}.volumeName`)] : nameErrors(`${path}.volumeName`, 'label', name);
  if (str(s['volumeNamespace']) !== '') errs.push(...nameErrors(`${path}.volumeNamespace`, 'label', str(s['volumeNamespace'])));
  const ref = obj(s['secretRef']);
  if (ref) errs.push(...required(ref, 'name', `${path}.secretRef`));
  return errs;
}

/** validateCSIVolumeSource (ValidateCSIDriverName; a node publish secret's name problems at `csi.name`, as upstream). */
function csiErrors(path: string, s: O): FieldError[] {
  const driver = str(s['driver']);
  const errs: FieldError[] = [];
  if (driver === '') errs.push(fieldErr.required(`${path}.driver`));
  if (driver.length > 63) errs.push(fieldErr.tooLong(`${path}.driver`, 63));
  for (const p of nameProblems('subdomain', driver.toLowerCase())) errs.push(fieldErr.invalid(`${path}.driver`, driver, p));
  const ref = obj(s['nodePublishSecretRef']);
  if (ref) {
    const name = str(ref['name']);
    if (name === '') errs.push(fieldErr.required(`${path}.nodePublishSecretRef.name`));
    else errs.push(...nameErrors(`${path}.name`, 'subdomain', name));
  }
  return errs;
}

const OBJECT_META_FIELDS: readonly (readonly [string, string])[] = [
  ['name', 'name'], ['generateName', 'generateName'], ['namespace', 'namespace'], ['selfLink', 'selfLink'], ['uid', 'uID'], ['resourceVersion', 'resourceVersion'],
  ['generation', 'generation'], ['creationTimestamp', 'creationTimestamp'], ['deletionTimestamp', 'deletionTimestamp'], ['deletionGracePeriodSeconds', 'deletionGracePeriodSeconds'],
  ['ownerReferences', 'ownerReferences'], ['finalizers', 'finalizers'], ['managedFields', 'managedFields'],
];
const ACCESS_MODES = ['ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOnce', 'ReadWriteOncePod'];

/** validateEphemeralVolumeSource: ValidatePersistentVolumeClaimTemplate (metadata, and the claim spec's basic rules). */
function ephemeralErrors(path: string, s: O): FieldError[] {
  const tpl = obj(s['volumeClaimTemplate']);
  if (!tpl) return [fieldErr.required(`${path}.volumeClaimTemplate`)];
  const tp = `${path}.volumeClaimTemplate`;
  const meta = obj(tpl['metadata']) ?? {};
  const errs: FieldError[] = [];
  // ValidateAnnotations: a key is judged lowercased and shown as written.
  for (const k of Object.keys(obj(meta['annotations']) ?? {})) for (const p of labelKeyProblem(k.toLowerCase())?.split('; ') ?? []) errs.push(fieldErr.invalid(`${tp}.metadata.annotations`, k, p));
  errs.push(...labelsErrors(`${tp}.metadata.labels`, meta['labels']));
  for (const [k, shown] of OBJECT_META_FIELDS) {
    const v = meta[k];
    if (isSet(v) && v !== '' && v !== 0 && !(Array.isArray(v) && v.length === 0)) errs.push(fieldErr.forbidden(`${tp}.metadata.${shown}`, 'cannot be set'));
  }
  const spec = obj(tpl['spec']) ?? {};
  const sp = `${tp}.spec`;
  const modes = arr(spec['accessModes']);
  if (modes.length === 0) errs.push(fieldErr.required(`${sp}.accessModes`, 'at least 1 access mode is required'));
  if (isSet(spec['selector'])) errs.push(...labelSelectorErrors(`${sp}.selector`, spec['selector']));
  let rwop = false;
  let other = false;
  for (const m of modes) {
    if (!ACCESS_MODES.includes(str(m))) errs.push(fieldErr.notSupported(`${sp}.accessModes`, m, ACCESS_MODES));
    if (m === 'ReadWriteOncePod') rwop = true;
    else if (ACCESS_MODES.includes(str(m))) other = true;
  }
  if (rwop && other) errs.push(fieldErr.forbidden(`${sp}.accessModes`, 'may not use ReadWriteOncePod with other access modes'));
  const requests = obj(obj(spec['resources'])?.['requests']) ?? {};
  const storage = requests['storage'];
  const stp = `${sp}.resources[storage]`;
  if (!('storage' in requests)) errs.push(fieldErr.required(stp));
  else {
    const n = quantityNanos(storage);
    if (n === null) errs.push(fieldErr.invalid(stp, storage, QUANTITY_REGEX_TEXT));
    else if (n <= 0n) errs.push(fieldErr.invalid(stp, quantityString(storage), 'must be greater than zero'));
  }
  const cls = str(spec['storageClassName']);
  if (cls !== '') errs.push(...nameErrors(`${sp}.storageClassName`, 'subdomain', cls));
  if (isSet(spec['volumeMode']) && spec['volumeMode'] !== 'Block' && spec['volumeMode'] !== 'Filesystem') errs.push(fieldErr.notSupported(`${sp}.volumeMode`, spec['volumeMode'], ['Block', 'Filesystem']));
  return errs;
}

/** SetDefaults_ImageVolumeSource's pull policy for a reference: Always for `latest` or no tag, else IfNotPresent. */
function defaultPullPolicy(ref: string): string {
  const tag = ref.includes('@') ? 'digest' : ref.slice(ref.lastIndexOf('/') + 1).split(':')[1] ?? '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** validateImageVolumeSource (the reference is required in a Pod, not in a template; an empty pullPolicy is its default). */
function imageErrors(path: string, s: O, isPod: boolean): FieldError[] {
  const errs = isPod ? required(s, 'reference', path) : [];
  const policy = blank(s['pullPolicy']) ? defaultPullPolicy(str(s['reference'])) : s['pullPolicy'];
  if (!['Always', 'IfNotPresent', 'Never'].includes(str(policy)) || typeof policy !== 'string') errs.push(fieldErr.notSupported(`${path}.pullPolicy`, policy, ['Always', 'IfNotPresent', 'Never']));
  return errs;
}

interface SourceRule {
  /** The v1 JSON key. */
  readonly key: string;
  /** The field named by "may not specify more than 1 volume type" (upstream's Child(), typos included). */
  readonly dup: string;
  /** The field the source's own errors are under. */
  readonly at: string;
  readonly check: (path: string, s: O, ctx: { volPath: string; volName: string; isPod: boolean }) => FieldError[];
}

const req = (...keys: string[]) => (path: string, s: O): FieldError[] => keys.flatMap((k) => required(s, k, path));
const partitionErrors = (path: string, s: O): FieldError[] => {
  const p = num(s['partition']);
  return p < 0 || p > 255 ? [fieldErr.invalid(`${path}.partition`, p, 'must be between 1 and 255, inclusive')] : [];
};
const secretRefName = (path: string, s: O): FieldError[] => {
  const ref = obj(s['secretRef']);
  return ref ? required(ref, 'name', `${path}.secretRef`) : [];
};

/** validateVolumeSource's sources, in its order. */
const SOURCES: readonly SourceRule[] = [
  { key: 'emptyDir', dup: 'emptyDir', at: 'emptyDir', check: emptyDirErrors },
  { key: 'hostPath', dup: 'hostPath', at: 'hostPath', check: hostPathErrors },
  { key: 'gitRepo', dup: 'gitRepo', at: 'gitRepo', check: (p, s) => [...required(s, 'repository', p), ...localDescendingErrors(`${p}.directory`, str(s['directory']))] },
  { key: 'gcePersistentDisk', dup: 'gcePersistentDisk', at: 'persistentDisk', check: (p, s) => [...required(s, 'pdName', p), ...partitionErrors(p, s)] },
  { key: 'awsElasticBlockStore', dup: 'awsElasticBlockStore', at: 'awsElasticBlockStore', check: (p, s) => [...required(s, 'volumeID', p), ...partitionErrors(p, s)] },
  { key: 'secret', dup: 'secret', at: 'secret', check: (p, s) => keysVolumeErrors(p, s, 'secretName') },
  { key: 'nfs', dup: 'nfs', at: 'nfs', check: nfsErrors },
  { key: 'iscsi', dup: 'iscsi', at: 'iscsi', check: (p, s, c) => iscsiErrors(p, s, c.volPath, c.volName) },
  { key: 'glusterfs', dup: 'glusterfs', at: 'glusterfs', check: req('endpoints', 'path') },
  { key: 'flocker', dup: 'flocker', at: 'flocker', check: flockerErrors },
  { key: 'persistentVolumeClaim', dup: 'persistentVolumeClaim', at: 'persistentVolumeClaim', check: req('claimName') },
  { key: 'rbd', dup: 'rbd', at: 'rbd', check: (p, s) => [...(arr(s['monitors']).length ? [] : [fieldErr.required(`${p}.monitors`)]), ...required(s, 'image', p)] },
  { key: 'cinder', dup: 'cinder', at: 'cinder', check: (p, s) => [...required(s, 'volumeID', p), ...secretRefName(p, s)] },
  { key: 'cephfs', dup: 'cephFS', at: 'cephfs', check: (p, s) => (arr(s['monitors']).length ? [] : [fieldErr.required(`${p}.monitors`)]) },
  { key: 'quobyte', dup: 'quobyte', at: 'quobyte', check: quobyteErrors },
  { key: 'downwardAPI', dup: 'downwarAPI', at: 'downwardAPI', check: downwardAPIErrors },
  { key: 'fc', dup: 'fc', at: 'fc', check: fcErrors },
  { key: 'flexVolume', dup: 'flexVolume', at: 'flexVolume', check: flexErrors },
  { key: 'configMap', dup: 'configMap', at: 'configMap', check: (p, s) => keysVolumeErrors(p, s, 'name') },
  { key: 'azureFile', dup: 'azureFile', at: 'azureFile', check: req('secretName', 'shareName') },
  { key: 'vsphereVolume', dup: 'vsphereVolume', at: 'vsphereVolume', check: req('volumePath') },
  { key: 'photonPersistentDisk', dup: 'photonPersistentDisk', at: 'photonPersistentDisk', check: req('pdID') },
  { key: 'portworxVolume', dup: 'portworxVolume', at: 'portworxVolume', check: req('volumeID') },
  { key: 'azureDisk', dup: 'azureDisk', at: 'azureDisk', check: azureDiskErrors },
  { key: 'storageos', dup: 'storageos', at: 'storageos', check: storageOSErrors },
  { key: 'projected', dup: 'projected', at: 'projected', check: projectedErrors },
  { key: 'scaleIO', dup: 'scaleIO', at: 'scaleIO', check: req('gateway', 'system', 'volumeName') },
  { key: 'csi', dup: 'csi', at: 'csi', check: csiErrors },
  { key: 'ephemeral', dup: 'ephemeral', at: 'ephemeral', check: ephemeralErrors },
  { key: 'image', dup: 'image', at: 'image', check: (p, s, c) => imageErrors(p, s, c.isPod) },
];
export const VOLUME_SOURCE_KEYS: readonly string[] = SOURCES.map((s) => s.key);

/** validateVolumeSource: exactly one source, each checked by its own rules. */
export function volumeSourceErrors(path: string, v: O, isPod: boolean): FieldError[] {
  const errs: FieldError[] = [];
  let n = 0;
  for (const rule of SOURCES) {
    if (!isSet(v[rule.key])) continue;
    if (n > 0) {
      errs.push(fieldErr.forbidden(`${path}.${rule.dup}`, ONE_TYPE));
      continue;
    }
    n++;
    errs.push(...rule.check(`${path}.${rule.at}`, obj(v[rule.key]) ?? {}, { volPath: path, volName: str(v['name']), isPod }));
  }
  if (n === 0) errs.push(fieldErr.required(path, 'must specify a volume type'));
  return errs;
}

/** SetDefaults_Volume, as validation judges it: a volume with no source is an emptyDir. */
function withDefaultSource(v: O): O {
  return SOURCES.some((r) => isSet(v[r.key])) ? v : { ...v, emptyDir: {} };
}

/** ValidateVolumes: each volume's source, its name (DNS label, unique); the volumes without errors, by name. */
export function volumesErrors(path: string, volumes: unknown[], isPod: boolean): { vols: Map<string, O>; errs: FieldError[] } {
  const vols = new Map<string, O>();
  const errs: FieldError[] = [];
  volumes.forEach((x, i) => {
    const v = withDefaultSource(obj(x) ?? {});
    const vp = `${path}[${i}]`;
    const name = str(v['name']);
    const el = volumeSourceErrors(vp, v, isPod);
    if (name === '') el.push(fieldErr.required(`${vp}.name`));
    else el.push(...nameErrors(`${vp}.name`, 'label', name));
    if (vols.has(name)) el.push(fieldErr.duplicate(`${vp}.name`, name));
    // Upstream's allNames holds only the volumes without errors: a duplicate of a bad one is not reported.
    if (el.length === 0) vols.set(name, v);
    else errs.push(...el);
  });
  return { vols, errs };
}

const PROPAGATIONS = ['Bidirectional', 'HostToContainer', 'None'];
const RRO = ['Disabled', 'Enabled', 'IfPossible'];

/** ValidateVolumeMounts for one container (devices: its volumeDevices, by name). */
function volumeMountsErrors(path: string, c: O, vols: VolumeMap): FieldError[] {
  const errs: FieldError[] = [];
  const devices = new Map(arr(c['volumeDevices']).map((d) => [str(obj(d)?.['name']), str(obj(d)?.['devicePath'])] as const));
  const devicePaths = new Set(devices.values());
  const seen = new Set<string>();
  const privileged = obj(c['securityContext'])?.['privileged'] === true;
  arr(c['volumeMounts']).forEach((x, i) => {
    const m = obj(x) ?? {};
    const mp = `${path}[${i}]`;
    const name = str(m['name']);
    const mountPath = str(m['mountPath']);
    if (name === '') errs.push(fieldErr.required(`${mp}.name`));
    if (!vols.has(name)) errs.push(notFound(`${mp}.name`, name));
    if (mountPath === '') errs.push(fieldErr.required(`${mp}.mountPath`));
    if (seen.has(mountPath)) errs.push(fieldErr.invalid(`${mp}.mountPath`, mountPath, 'must be unique'));
    seen.add(mountPath);
    if (devices.has(name)) errs.push(fieldErr.invalid(`${mp}.name`, name, 'must not already exist in volumeDevices'));
    if (devicePaths.has(mountPath)) errs.push(fieldErr.invalid(`${mp}.mountPath`, mountPath, 'must not already exist as a path in volumeDevices'));
    const subPath = str(m['subPath']);
    const subPathExpr = str(m['subPathExpr']);
    if (isSet(vols.get(name)?.['image'])) {
      if (subPath !== '') errs.push(fieldErr.invalid(`${mp}.subPath`, subPath, 'not allowed in image volume sources'));
      if (subPathExpr !== '') errs.push(fieldErr.invalid(`${mp}.subPathExpr`, subPathExpr, 'not allowed in image volume sources'));
    }
    // Upstream reports these at the list's path, without the mount's index.
    if (subPath !== '') errs.push(...localDescendingErrors(`${path}.subPath`, subPath));
    if (subPathExpr !== '') {
      if (subPath !== '') errs.push(fieldErr.invalid(`${mp}.subPathExpr`, subPathExpr, 'subPathExpr and subPath are mutually exclusive'));
      errs.push(...localDescendingErrors(`${path}.subPathExpr`, subPathExpr));
    }
    const prop = m['mountPropagation'];
    if (isSet(prop)) {
      if (!PROPAGATIONS.includes(str(prop))) errs.push(fieldErr.notSupported(`${path}.mountPropagation`, prop, PROPAGATIONS));
      if (prop === 'Bidirectional' && !privileged) errs.push(fieldErr.forbidden(`${path}.mountPropagation`, 'Bidirectional mount propagation is available only to privileged containers'));
    }
    const rro = m['recursiveReadOnly'];
    if (isSet(rro)) {
      if (rro === 'Enabled' || rro === 'IfPossible') {
        if (m['readOnly'] !== true) errs.push(fieldErr.forbidden(`${path}.recursiveReadOnly`, 'may only be specified when readOnly is true'));
        if (isSet(prop) && prop !== 'None') errs.push(fieldErr.forbidden(`${path}.recursiveReadOnly`, 'may only be specified when mountPropagation is None or not specified'));
      } else if (rro !== 'Disabled') errs.push(fieldErr.notSupported(`${path}.recursiveReadOnly`, rro, RRO));
    }
  });
  return errs;
}

/** ValidateVolumeDevices for one container (mounts: its volumeMounts, by name). */
function volumeDevicesErrors(path: string, c: O, vols: VolumeMap): FieldError[] {
  const errs: FieldError[] = [];
  const mounts = new Map(arr(c['volumeMounts']).map((m) => [str(obj(m)?.['name']), str(obj(m)?.['mountPath'])] as const));
  const mountPaths = new Set(mounts.values());
  const paths = new Set<string>();
  const names = new Set<string>();
  arr(c['volumeDevices']).forEach((x, i) => {
    const d = obj(x) ?? {};
    const dp = `${path}[${i}]`;
    const name = str(d['name']);
    const devicePath = str(d['devicePath']);
    const vol = vols.get(name);
    if (name === '') errs.push(fieldErr.required(`${dp}.name`));
    if (names.has(name)) errs.push(fieldErr.invalid(`${dp}.name`, name, 'must be unique'));
    if (vol && !isSet(vol['persistentVolumeClaim']) && !isSet(vol['ephemeral'])) errs.push(fieldErr.invalid(`${dp}.name`, name, 'can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode'));
    if (!vol) errs.push(notFound(`${dp}.name`, name));
    if (devicePath === '') errs.push(fieldErr.required(`${dp}.devicePath`));
    if (paths.has(devicePath)) errs.push(fieldErr.invalid(`${dp}.devicePath`, devicePath, 'must be unique'));
    if (devicePath !== '' && devicePath.split('/').includes('..')) errs.push(fieldErr.invalid(`${dp}.devicePath`, devicePath, "can not contain backsteps ('..')"));
    else paths.add(devicePath);
    if (mounts.has(name)) errs.push(fieldErr.invalid(`${dp}.name`, name, 'must not already exist in volumeMounts'));
    if (mountPaths.has(devicePath)) errs.push(fieldErr.invalid(`${dp}.devicePath`, devicePath, 'must not already exist as a path in volumeMounts'));
    if (name !== '') names.add(name);
  });
  return errs;
}

/** A container's volumeMounts and volumeDevices, where validateContainerCommon checks them (`path` is the container's). */
export function containerVolumeErrors(path: string, c: O, vols: VolumeMap): FieldError[] {
  return [...volumeMountsErrors(`${path}.volumeMounts`, c, vols), ...volumeDevicesErrors(`${path}.volumeDevices`, c, vols)];
}

/** An ephemeral container's mounts and devices, and validateEphemeralContainers' rule that it uses no subPath or subPathExpr. */
export function ephemeralContainerVolumeErrors(path: string, c: O, vols: VolumeMap): FieldError[] {
  const errs = containerVolumeErrors(path, c, vols);
  arr(c['volumeMounts']).forEach((x, i) => {
    const m = obj(x) ?? {};
    if (str(m['subPath']) !== '') errs.push(fieldErr.forbidden(`${path}.volumeMounts[${i}].subPath`, 'cannot be set for an Ephemeral Container'));
    if (str(m['subPathExpr']) !== '') errs.push(fieldErr.forbidden(`${path}.volumeMounts[${i}].subPathExpr`, 'cannot be set for an Ephemeral Container'));
  });
  return errs;
}
