/**
 * Pod volumes, volumeMounts and volumeDevices as kube-apiserver validates them (volumes.ts through the
 * Pod and Deployment strategies): one case per rule, in upstream's words and at upstream's paths.
 */
import t from 'tap';
import type { FieldError } from '../api/errors.js';
import { mountServiceAccountToken } from '../admission/plugins.js';
import { STRATEGIES } from './kinds.js';
import { volumeSourceErrors } from './volumes.js';

type O = Record<string, unknown>;
const text = (errs: readonly FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const POD = STRATEGIES['pods']!;
const DEPLOY = STRATEGIES['deployments.apps']!;

const pod = (spec: O): O => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'nginx:1.25' }], ...spec } });
/** A Pod's create errors, defaulted as the API defaults it. */
const errsOf = (spec: O): string[] => {
  const o = structuredClone(pod(spec));
  POD.defaults(o);
  return text(POD.validate(o, null));
};
/** A Pod with these volumes (and, when given, these mounts on its container). */
const vol = (volumes: O[], mounts?: O[]): string[] => errsOf({ volumes, containers: [{ name: 'c', image: 'nginx:1.25', ...(mounts ? { volumeMounts: mounts } : {}) }] });
const one = (v: O): string[] => vol([{ name: 'v', ...v }]);

t.test('volumes: names and sources', async (t) => {
  t.same(vol([{ name: 'x', emptyDir: {} }, { name: 'x', emptyDir: {} }]), ['spec.volumes[1].name: Duplicate value: "x"']);
  t.same(vol([{ name: '', emptyDir: {} }]), ['spec.volumes[0].name: Required value']);
  t.same(vol([{ name: 'Bad_Name', emptyDir: {} }]), ["spec.volumes[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]);
  t.same(one({ emptyDir: {}, hostPath: { path: '/x' } }), ['spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type']);
  t.same(one({ persistentVolumeClaim: { claimName: 'a' }, downwardAPI: {} }), ['spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type'], "upstream's typo");
  t.same(text(volumeSourceErrors('spec.volumes[0]', { name: 'v' }, true)), ['spec.volumes[0]: Required value: must specify a volume type']);
  t.same(one({}), [], 'a volume without a source is an emptyDir (SetDefaults_Volume)');
  t.same(one({ emptyDir: null }), [], 'null is no source');
  t.same(vol([{ name: 'x', configMap: {} }, { name: 'x', emptyDir: {} }]), ['spec.volumes[0].configMap.name: Required value'], 'a duplicate of an invalid volume is not reported, as upstream');
});

t.test('volumes: emptyDir and hostPath', async (t) => {
  t.same(one({ emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } }), []);
  t.same(one({ emptyDir: { sizeLimit: '-1Mi' } }), ['spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity']);
  t.same(one({ emptyDir: { sizeLimit: 'lots' } }), ["spec.volumes[0].emptyDir.sizeLimit: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]);
  t.same(one({ hostPath: { path: '/var/log', type: 'Directory' } }), []);
  t.same(one({ hostPath: { path: '/var/log', type: '' } }), [], 'HostPathUnset');
  t.same(one({ hostPath: {} }), ['spec.volumes[0].hostPath.path: Required value']);
  t.same(one({ hostPath: { path: '/var/../etc' } }), ["spec.volumes[0].hostPath.path: Invalid value: \"/var/../etc\": must not contain '..'"]);
  t.same(one({ hostPath: { path: '/x', type: 'Dir' } }), ['spec.volumes[0].hostPath.type: Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"']);
});

t.test('volumes: secret, configMap and their items', async (t) => {
  t.same(one({ secret: { secretName: 's', defaultMode: 0o400, items: [{ key: 'a', path: 'dir/a', mode: 0o600 }] } }), []);
  t.same(one({ secret: {} }), ['spec.volumes[0].secret.secretName: Required value']);
  t.same(one({ configMap: {} }), ['spec.volumes[0].configMap.name: Required value']);
  t.same(one({ configMap: { name: 'c', defaultMode: 0o1000 } }), ['spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive']);
  t.same(one({ configMap: { name: 'c', items: [{}] } }), ['spec.volumes[0].configMap.items[0].key: Required value', 'spec.volumes[0].configMap.items[0].path: Required value']);
  t.same(one({ configMap: { name: 'c', items: [{ key: 'k', path: '/etc/x' }] } }), ['spec.volumes[0].configMap.items[0].path: Invalid value: "/etc/x": must be a relative path']);
  t.same(one({ configMap: { name: 'c', items: [{ key: 'k', path: 'a/../../b' }] } }), ["spec.volumes[0].configMap.items[0].path: Invalid value: \"a/../../b\": must not contain '..'"]);
  t.same(one({ configMap: { name: 'c', items: [{ key: 'k', path: '..data' }] } }), ["spec.volumes[0].configMap.items[0].path: Invalid value: \"..data\": must not start with '..'"]);
  t.same(one({ secret: { secretName: 's', items: [{ key: 'k', path: 'k', mode: -1 }] } }), ['spec.volumes[0].secret.items[0].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive']);
});

t.test('volumes: downwardAPI', async (t) => {
  t.same(one({ downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'app', fieldRef: { fieldPath: "metadata.labels['app']" } }, { path: 'cpu', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu', divisor: '1m' } }] } }), [], 'fieldRef apiVersion defaults to v1');
  t.same(one({ downwardAPI: { items: [{ fieldRef: { fieldPath: 'metadata.name' } }] } }), ['spec.volumes[0].downwardAPI.path: Required value'], "the item's errors are at the volume's path, as upstream's");
  t.same(one({ downwardAPI: { items: [{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }] } }), ['spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "status.podIP": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"']);
  t.same(one({ downwardAPI: { items: [{ path: 'x', fieldRef: { fieldPath: 'spec.nope' } }] } }), ['spec.volumes[0].downwardAPI.fieldRef.fieldPath: Invalid value: "spec.nope": error converting fieldPath: field label not supported: spec.nope']);
  t.same(one({ downwardAPI: { items: [{ path: 'x', fieldRef: { apiVersion: 'v2', fieldPath: 'metadata.name' } }] } }), ['spec.volumes[0].downwardAPI.fieldRef.fieldPath: Invalid value: "metadata.name": error converting fieldPath: unsupported pod version: v2']);
  t.same(one({ downwardAPI: { items: [{ path: 'x' }] } }), ['spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required']);
  t.same(one({ downwardAPI: { items: [{ path: 'x', fieldRef: { fieldPath: 'metadata.name' }, resourceFieldRef: { containerName: 'c', resource: 'limits.cpu' } }] } }), ['spec.volumes[0].downwardAPI: Invalid value: "resource": fieldRef and resourceFieldRef can not be specified simultaneously']);
  t.same(one({ downwardAPI: { items: [{ path: 'x', resourceFieldRef: { resource: 'limits.cpu' } }] } }), ['spec.volumes[0].downwardAPI.resourceFieldRef.containerName: Required value']);
  t.same(one({ downwardAPI: { items: [{ path: 'x', resourceFieldRef: { containerName: 'c', resource: 'limits.gpu' } }] } }), ['spec.volumes[0].downwardAPI.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"']);
  t.same(one({ downwardAPI: { items: [{ path: 'x', resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '3Mi' } }] } }), ['spec.volumes[0].downwardAPI.resourceFieldRef.divisor: Invalid value: "limits.memory": only divisor\'s values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource']);
});

t.test('volumes: projected', async (t) => {
  const proj = (sources: O[], extra: O = {}) => one({ projected: { sources, ...extra } });
  t.same(proj([{ serviceAccountToken: { path: 'token' } }]), [], 'expirationSeconds defaults to 3600');
  t.same(proj([{ serviceAccountToken: { path: 'token', expirationSeconds: 60 } }]), ['spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes']);
  t.same(proj([{ serviceAccountToken: { path: 'token', expirationSeconds: 2 ** 33 } }]), ['spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 8589934592: may not specify a duration larger than 2^32 seconds']);
  t.same(proj([{ serviceAccountToken: {} }]), ['spec.volumes[0].projected.path: Required value'], "a token's path is reported at the volume's projected path, as upstream's");
  t.same(proj([{ serviceAccountToken: { path: '../token' } }]), ["spec.volumes[0].projected.path: Invalid value: \"../token\": must not contain '..'"]);
  t.same(proj([{ secret: {} }]), ['spec.volumes[0].projected.sources[0].secret.name: Required value']);
  t.same(proj([{ configMap: { name: 'a', items: [{ key: 'k', path: 'x' }] } }, { secret: { name: 'b', items: [{ key: 'k', path: 'x' }] } }]), ['spec.volumes[0].projected: Invalid value: "b": conflicting duplicate paths']);
  t.same(proj([{ configMap: { name: 'a' }, secret: { name: 'b' } }]), ['spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source']);
  t.same(proj([{ downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'status.phase' } }] } }]), ['spec.volumes[0].projected.sources[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"']);
  t.same(proj([{ configMap: { name: 'a' } }], { defaultMode: 0o1777 }), ['spec.volumes[0].projected.defaultMode: Invalid value: 1023: must be a number between 0 and 0777 (octal), both inclusive']);
});

t.test('volumes: projected clusterTrustBundle', async (t) => {
  const ctb = (c: O) => one({ projected: { sources: [{ clusterTrustBundle: c }] } });
  t.same(ctb({ name: 'bundle', path: 'ca.pem' }), []);
  t.same(ctb({ signerName: 'example.com/signer', path: 'ca.pem' }), []);
  t.same(ctb({ name: 'example.com:signer:b1', path: 'ca.pem' }), [], 'a signer bundle named with its prefix');
  t.same(ctb({ path: 'ca.pem' }), ['spec.volumes[0].projected.sources[0].clusterTrustBundle: Required value: either name or signerName must be specified']);
  t.same(ctb({ name: 'a', signerName: 'example.com/s', path: 'ca.pem' }), ['spec.volumes[0].projected.sources[0].clusterTrustBundle: Invalid value: {"name":"a","signerName":"example.com/s","path":"ca.pem"}: only one of name and signerName may be used']);
  t.same(ctb({ signerName: 'signer', path: 'ca.pem' }), ["spec.volumes[0].projected.sources[0].clusterTrustBundle.signerName: Invalid value: \"signer\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]);
  t.same(ctb({ name: 'b', labelSelector: {}, path: 'ca.pem' }), ['spec.volumes[0].projected.sources[0].clusterTrustBundle.labelSelector: Invalid value: {}: labelSelector must be unset if name is specified']);
  t.same(ctb({ name: 'b' }), ['spec.volumes[0].projected.sources[0].clusterTrustBundle.path: Required value']);
});

t.test('volumes: persistentVolumeClaim, ephemeral, nfs, csi, image and the rest', async (t) => {
  t.same(one({ persistentVolumeClaim: { claimName: 'data' } }), []);
  t.same(one({ persistentVolumeClaim: {} }), ['spec.volumes[0].persistentVolumeClaim.claimName: Required value']);
  const claim = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
  t.same(one({ ephemeral: { volumeClaimTemplate: { metadata: { labels: { app: 'x' } }, spec: claim } } }), []);
  t.same(one({ ephemeral: {} }), ['spec.volumes[0].ephemeral.volumeClaimTemplate: Required value']);
  t.same(one({ ephemeral: { volumeClaimTemplate: { spec: {} } } }), ['spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Required value: at least 1 access mode is required', 'spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]: Required value']);
  t.same(one({ ephemeral: { volumeClaimTemplate: { metadata: { name: 'n' }, spec: { ...claim, accessModes: ['ReadWriteOncePod', 'ReadOnlyMany'], volumeMode: 'Raw' } } } }), [
    'spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.name: Forbidden: cannot be set',
    'spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes',
    'spec.volumes[0].ephemeral.volumeClaimTemplate.spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"',
  ]);
  t.same(one({ nfs: { server: 'nas', path: '/export' } }), []);
  t.same(one({ nfs: {} }), ['spec.volumes[0].nfs.server: Required value', 'spec.volumes[0].nfs.path: Required value', 'spec.volumes[0].nfs.path: Invalid value: "": must be an absolute path']);
  t.same(one({ nfs: { server: 'nas', path: 'export' } }), ['spec.volumes[0].nfs.path: Invalid value: "export": must be an absolute path']);
  t.same(one({ csi: { driver: 'csi.example.com' } }), []);
  t.same(one({ csi: {} }), ['spec.volumes[0].csi.driver: Required value', "spec.volumes[0].csi.driver: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]);
  t.same(one({ csi: { driver: 'd.example.com', nodePublishSecretRef: {} } }), ['spec.volumes[0].csi.nodePublishSecretRef.name: Required value']);
  t.same(one({ image: { reference: 'registry/data:1' } }), [], 'pullPolicy defaults from the tag');
  t.same(one({ image: {} }), ['spec.volumes[0].image.reference: Required value']);
  t.same(one({ image: { reference: 'r:1', pullPolicy: 'Sometimes' } }), ['spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"']);
  t.same(one({ gcePersistentDisk: { partition: 300 } }), ['spec.volumes[0].persistentDisk.pdName: Required value', 'spec.volumes[0].persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive'], "upstream's path");
  t.same(one({ iscsi: { targetPortal: '10.0.0.1:3260', iqn: 'x', lun: 0 } }), ['spec.volumes[0].iscsi.iqn: Invalid value: "x": must be valid format starting with iqn, eui, or naa']);
  t.same(one({ iscsi: { targetPortal: '10.0.0.1:3260', iqn: 'iqn.2001-04.com.example:storage', lun: 0 } }), []);
  t.same(one({ cephfs: {} }), ['spec.volumes[0].cephfs.monitors: Required value']);
  t.same(one({ rbd: { monitors: ['m'] } }), ['spec.volumes[0].rbd.image: Required value']);
  t.same(one({ flocker: {} }), ['spec.volumes[0].flocker: Required value: one of datasetName and datasetUUID is required']);
  t.same(one({ fc: { targetWWNs: ['500a0982991b8dc5'] } }), ['spec.volumes[0].fc.lun: Required value: lun is required if targetWWNs is specified']);
  t.same(one({ flexVolume: { driver: 'x/y', options: { 'kubernetes.io/secret': 'a' } } }), ['spec.volumes[0].flexVolume.options[kubernetes.io/secret]: Invalid value: "kubernetes.io/secret": kubernetes.io and k8s.io namespaces are reserved']);
  t.same(one({ azureDisk: { diskName: 'd', diskURI: '/subscriptions/x' } }), ['spec.volumes[0].azureDisk.diskURI: Unsupported value: "/subscriptions/x": supported values: "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"'], 'kind defaults to Shared');
  t.same(one({ azureDisk: { diskName: 'd', diskURI: '/subscriptions/x', kind: 'Managed' } }), []);
  t.same(one({ quobyte: { registry: 'reg', volume: 'v' } }), ['spec.volumes[0].quobyte.registry: Invalid value: "reg": must be a host:port pair or multiple pairs separated by commas']);
  t.same(one({ storageos: { volumeName: 'V' } }), ["spec.volumes[0].storageos.volumeName: Invalid value: \"V\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]);
  for (const [k, field] of [['gitRepo', 'repository'], ['awsElasticBlockStore', 'volumeID'], ['glusterfs', 'endpoints'], ['cinder', 'volumeID'], ['azureFile', 'secretName'], ['vsphereVolume', 'volumePath'], ['photonPersistentDisk', 'pdID'], ['portworxVolume', 'volumeID'], ['scaleIO', 'gateway']] as const) {
    t.ok(one({ [k]: {} }).includes(`spec.volumes[0].${k}.${field}: Required value`), `${k}.${field} is required`);
  }
});

t.test('volumeMounts', async (t) => {
  const m = (mounts: O[], volumes: O[] = [{ name: 'data', emptyDir: {} }]) => vol(volumes, mounts);
  t.same(m([{ name: 'data', mountPath: '/data', subPath: 'a/b', readOnly: true }]), []);
  t.same(m([{ name: 'x', mountPath: '/x' }]), ['spec.containers[0].volumeMounts[0].name: Not found: "x"']);
  t.same(m([{ name: 'data', mountPath: '/x' }], [{ name: 'data', configMap: {} }]), ['spec.volumes[0].configMap.name: Required value', 'spec.containers[0].volumeMounts[0].name: Not found: "data"'], 'an invalid volume is not mountable');
  t.same(m([{ name: '', mountPath: '' }]), ['spec.containers[0].volumeMounts[0].name: Required value', 'spec.containers[0].volumeMounts[0].name: Not found: ""', 'spec.containers[0].volumeMounts[0].mountPath: Required value']);
  t.same(m([{ name: 'data', mountPath: 'relative' }]), [], 'upstream only requires a mountPath');
  t.same(m([{ name: 'data', mountPath: '/d' }, { name: 'data', mountPath: '/d' }]), ['spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d": must be unique']);
  t.same(m([{ name: 'data', mountPath: '/d', subPath: '/abs' }]), ['spec.containers[0].volumeMounts.subPath: Invalid value: "/abs": must be a relative path'], "upstream's path: the list's, without the index");
  t.same(m([{ name: 'data', mountPath: '/d', subPath: 'a/../..' }]), ["spec.containers[0].volumeMounts.subPath: Invalid value: \"a/../..\": must not contain '..'"]);
  t.same(m([{ name: 'data', mountPath: '/d', subPath: 'a', subPathExpr: '$(POD)' }]), ['spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: "$(POD)": subPathExpr and subPath are mutually exclusive']);
  t.same(m([{ name: 'data', mountPath: '/d', subPathExpr: '../$(POD)' }]), ["spec.containers[0].volumeMounts.subPathExpr: Invalid value: \"../$(POD)\": must not contain '..'"]);
  t.same(m([{ name: 'data', mountPath: '/d', mountPropagation: 'Shared' }]), ['spec.containers[0].volumeMounts.mountPropagation: Unsupported value: "Shared": supported values: "Bidirectional", "HostToContainer", "None"']);
  t.same(m([{ name: 'data', mountPath: '/d', mountPropagation: 'Bidirectional' }]), ['spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers']);
  t.same(errsOf({ volumes: [{ name: 'data', emptyDir: {} }], containers: [{ name: 'c', image: 'nginx:1.25', securityContext: { privileged: true }, volumeMounts: [{ name: 'data', mountPath: '/d', mountPropagation: 'Bidirectional' }] }] }), [], 'privileged');
  t.same(m([{ name: 'data', mountPath: '/d', mountPropagation: 'HostToContainer' }]), []);
  t.same(m([{ name: 'data', mountPath: '/d', recursiveReadOnly: 'Enabled' }]), ['spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true']);
  t.same(m([{ name: 'data', mountPath: '/d', readOnly: true, recursiveReadOnly: 'IfPossible', mountPropagation: 'HostToContainer' }]), ['spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified']);
  t.same(m([{ name: 'data', mountPath: '/d', recursiveReadOnly: 'Sometimes' }]), ['spec.containers[0].volumeMounts.recursiveReadOnly: Unsupported value: "Sometimes": supported values: "Disabled", "Enabled", "IfPossible"']);
  t.same(m([{ name: 'img', mountPath: '/d', subPath: 'a' }], [{ name: 'img', image: { reference: 'r:1' } }]), ['spec.containers[0].volumeMounts[0].subPath: Invalid value: "a": not allowed in image volume sources']);
  t.same(errsOf({ volumes: [{ name: 'data', emptyDir: {} }], initContainers: [{ name: 'i', image: 'busybox:1', volumeMounts: [{ name: 'nope', mountPath: '/d' }] }] }), ['spec.initContainers[0].volumeMounts[0].name: Not found: "nope"'], 'init containers too');
});

t.test('volumeDevices', async (t) => {
  const d = (c: O, volumes: O[] = [{ name: 'blk', persistentVolumeClaim: { claimName: 'b' } }, { name: 'data', emptyDir: {} }]) => errsOf({ volumes, containers: [{ name: 'c', image: 'nginx:1.25', ...c }] });
  t.same(d({ volumeDevices: [{ name: 'blk', devicePath: '/dev/xvda' }] }), []);
  t.same(d({ volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] }), ['spec.containers[0].volumeDevices[0].name: Invalid value: "data": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode']);
  t.same(d({ volumeDevices: [{ name: 'nope', devicePath: '/dev/xvda' }] }), ['spec.containers[0].volumeDevices[0].name: Not found: "nope"']);
  t.same(d({ volumeDevices: [{ name: 'blk', devicePath: '/dev/x' }, { name: 'blk', devicePath: '/dev/x' }] }), ['spec.containers[0].volumeDevices[1].name: Invalid value: "blk": must be unique', 'spec.containers[0].volumeDevices[1].devicePath: Invalid value: "/dev/x": must be unique']);
  t.same(d({ volumeDevices: [{ name: 'blk', devicePath: '/dev/../x' }] }), ["spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/dev/../x\": can not contain backsteps ('..')"]);
  t.same(d({ volumeMounts: [{ name: 'data', mountPath: '/dev/x' }], volumeDevices: [{ name: 'blk', devicePath: '/dev/x' }] }), [
    'spec.containers[0].volumeMounts[0].mountPath: Invalid value: "/dev/x": must not already exist as a path in volumeDevices',
    'spec.containers[0].volumeDevices[0].devicePath: Invalid value: "/dev/x": must not already exist as a path in volumeMounts',
  ]);
  t.same(d({ volumeMounts: [{ name: 'blk', mountPath: '/m' }], volumeDevices: [{ name: 'blk', devicePath: '/dev/x' }] }), [
    'spec.containers[0].volumeMounts[0].name: Invalid value: "blk": must not already exist in volumeDevices',
    'spec.containers[0].volumeDevices[0].name: Invalid value: "blk": must not already exist in volumeMounts',
  ]);
});

t.test('ephemeral containers and templates', async (t) => {
  const o = structuredClone(pod({ volumes: [{ name: 'data', emptyDir: {} }], ephemeralContainers: [{ name: 'dbg', image: 'busybox:1', volumeMounts: [{ name: 'data', mountPath: '/d', subPath: 'x' }] }] }));
  POD.defaults(o);
  t.same(text(POD.validate(o, null)), ['spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container', 'spec.ephemeralContainers: Forbidden: cannot be set on create']);
  const deploy = (volumes: O[], mounts: O[]): O => ({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'default' },
    spec: { selector: { matchLabels: { app: 'a' } }, template: { metadata: { labels: { app: 'a' } }, spec: { volumes, containers: [{ name: 'c', image: 'nginx:1.25', volumeMounts: mounts }] } } },
  });
  const de = (o: O) => {
    const c = structuredClone(o);
    DEPLOY.defaults(c);
    return text(DEPLOY.validate(c, null));
  };
  t.same(de(deploy([{ name: 'data', emptyDir: {} }], [{ name: 'nope', mountPath: '/d' }])), ['spec.template.spec.containers[0].volumeMounts[0].name: Not found: "nope"'], "a workload's template is validated too");
  t.same(de(deploy([{ name: 'img', image: {} }], [])), [], "an image volume's reference is only required in a Pod");
});

t.test('the ServiceAccount admission plugin injects a kube-api-access volume that validates', async (t) => {
  const o = structuredClone(pod({ initContainers: [{ name: 'i', image: 'busybox:1' }], volumes: [{ name: 'data', emptyDir: {} }] }));
  POD.defaults(o);
  const spec = o['spec'] as O;
  mountServiceAccountToken(spec, () => 0);
  const vols = spec['volumes'] as O[];
  t.equal(vols.length, 2);
  t.match(vols[1], { name: 'kube-api-access-bbbbb', projected: { sources: [{ serviceAccountToken: { path: 'token' } }, {}, {}] } }, 'the projected volume is there');
  t.same(text(POD.validate(o, null)), [], 'and it, and the mounts added to every container, validate');
  t.same(((spec['containers'] as O[])[0]!['volumeMounts'] as O[]).map((m) => m['name']), ['kube-api-access-bbbbb']);
});
