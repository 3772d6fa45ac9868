/**
 * controlplane/api/protobuf-schema: the protobuf field tables of the kinds
 * the embedded API server serves, for decoding kubectl's
 * `application/vnd.kubernetes.protobuf` request bodies (protobuf.ts).
 *
 * Each message is one line, `number:jsonName:type` per field. The numbers and
 * names were read from upstream's generated.proto (k8s.io/api core/v1,
 * apps/v1, discovery/v1, coordination/v1, autoscaling/v1, rbac/v1,
 * authorization/v1, authentication/v1 at 10b39a3, networking/v1's IPAddress
 * from its types.go; k8s.io/apimachinery meta/v1 at eed236c); whether a Go
 * field is a pointer, `omitempty` or `,inline` from the struct tags of the
 * same types.go. That
 * is what decides the JSON a protobuf body stands for, since client-go's
 * gogo encoding writes every non-pointer field, zero or not:
 *
 *   s i32 i64 b bytes    scalars (a JSON string, number, bool, base64)
 *   time mtime           metav1.Time / MicroTime ({seconds=1,nanos=2}, RFC3339)
 *   qty ios f1           Quantity {string=1}, IntOrString {type=1,intVal=2,strVal=3}, FieldsV1 {Raw=1}
 *   strs                 a []string type masked as a message {items=1} (ExtraValue, AttestationValue): a JSON array
 *   core.X meta.X ...    a message of this table
 *   {s:T}                a map (entries: key=1, value=2)
 *
 * and a prefix for the Go field's shape:
 *
 *   (none)  a value: a scalar is left out of the JSON when zero (omitempty);
 *           a struct is always there (`"resources": {}`), as encoding/json writes it
 *   !       a value without omitempty: always in the JSON, zero included
 *   *       a pointer: in the JSON exactly when on the wire (`replicas: 0` stays)
 *   [       repeated, omitempty: in the JSON when it has an element
 *   ![      repeated without omitempty: always in the JSON, `null` when empty (a nil slice, as
 *           encoding/json writes it: `"rules": null` in an aggregated ClusterRole)
 *   ^       an inline struct (`json:",inline"`): its fields go into the parent
 *
 * The tables written before the rbac and review kinds came (issue 27) give a
 * few slices without omitempty `[` (PodSpec.containers,
 * NodeSelector.nodeSelectorTerms, ProjectedVolumeSource.sources, ...): those
 * are left out when empty rather than `null`, which the JSON path reads alike.
 *
 * A field not in its message's line is refused by the decoder, never dropped.
 * Messages are reached from the served kinds (plus Binding, autoscaling/v1
 * Scale, authentication/v1 TokenRequest and DeleteOptions, the bodies of
 * subresources and deletes, and core/v1 LimitRange and ResourceQuota, to be
 * served next).
 */

export type ScalarType = 's' | 'i32' | 'i64' | 'b' | 'bytes';
export type SpecialType = 'time' | 'mtime' | 'qty' | 'ios' | 'f1' | 'strs';
export type FieldType =
  | { readonly t: 'scalar'; readonly s: ScalarType }
  | { readonly t: 'special'; readonly s: SpecialType }
  | { readonly t: 'message'; readonly name: string }
  | { readonly t: 'map'; readonly key: ScalarType; readonly value: FieldType };
export type FieldShape = 'value' | 'always' | 'pointer' | 'repeated' | 'repeatedAlways' | 'inline';

export interface FieldSpec {
  readonly num: number;
  /** The JSON name (for an inline struct, the proto name: it never reaches the JSON). */
  readonly json: string;
  readonly shape: FieldShape;
  readonly type: FieldType;
}

export interface MessageSpec {
  /** The upstream proto name, for messages: `k8s.io.api.core.v1.PodSpec`. */
  readonly fullName: string;
  readonly fields: ReadonlyMap<number, FieldSpec>;
}

const PACKAGES: Record<string, string> = {
  core: 'k8s.io.api.core.v1',
  apps: 'k8s.io.api.apps.v1',
  discovery: 'k8s.io.api.discovery.v1',
  coordination: 'k8s.io.api.coordination.v1',
  networking: 'k8s.io.api.networking.v1',
  autoscaling: 'k8s.io.api.autoscaling.v1',
  rbac: 'k8s.io.api.rbac.v1',
  authorization: 'k8s.io.api.authorization.v1',
  authentication: 'k8s.io.api.authentication.v1',
  meta: 'k8s.io.apimachinery.pkg.apis.meta.v1',
};

/** The kinds a protobuf body may be, by `apiVersion/kind` of its runtime.Unknown envelope. */
const KINDS: Record<string, string> = {
  'v1/Namespace': 'core.Namespace',
  'v1/Pod': 'core.Pod',
  'v1/Service': 'core.Service',
  'v1/Event': 'core.Event',
  'v1/Node': 'core.Node',
  'v1/Binding': 'core.Binding',
  'apps/v1/Deployment': 'apps.Deployment',
  'apps/v1/ReplicaSet': 'apps.ReplicaSet',
  'discovery.k8s.io/v1/EndpointSlice': 'discovery.EndpointSlice',
  'coordination.k8s.io/v1/Lease': 'coordination.Lease',
  'networking.k8s.io/v1/IPAddress': 'networking.IPAddress',
  'scheduling.k8s.io/v1/PriorityClass': 'scheduling.PriorityClass',
  'autoscaling/v1/Scale': 'autoscaling.Scale',
  'v1/ConfigMap': 'core.ConfigMap',
  'v1/Secret': 'core.Secret',
  'v1/ServiceAccount': 'core.ServiceAccount',
  'v1/Endpoints': 'core.Endpoints',
  'v1/LimitRange': 'core.LimitRange',
  'v1/ResourceQuota': 'core.ResourceQuota',
  'rbac.authorization.k8s.io/v1/Role': 'rbac.Role',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'rbac.ClusterRole',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'rbac.RoleBinding',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'rbac.ClusterRoleBinding',
  'authorization.k8s.io/v1/SelfSubjectAccessReview': 'authorization.SelfSubjectAccessReview',
  'authorization.k8s.io/v1/SelfSubjectRulesReview': 'authorization.SelfSubjectRulesReview',
  'authorization.k8s.io/v1/SubjectAccessReview': 'authorization.SubjectAccessReview',
  'authorization.k8s.io/v1/LocalSubjectAccessReview': 'authorization.LocalSubjectAccessReview',
  'authentication.k8s.io/v1/SelfSubjectReview': 'authentication.SelfSubjectReview',
  'authentication.k8s.io/v1/TokenReview': 'authentication.TokenReview',
  // The body of a ServiceAccount's `token` subresource.
  'authentication.k8s.io/v1/TokenRequest': 'authentication.TokenRequest',
};

const TABLE: Record<string, string> = {
  'core.AWSElasticBlockStoreVolumeSource': '1:volumeID:!s 2:fsType:s 3:partition:i32 4:readOnly:b',
  'core.Affinity': '1:nodeAffinity:*core.NodeAffinity 2:podAffinity:*core.PodAffinity 3:podAntiAffinity:*core.PodAntiAffinity',
  'core.AppArmorProfile': '1:type:!s 2:localhostProfile:*s',
  'core.AttachedVolume': '1:name:!s 2:devicePath:!s',
  'core.AzureDiskVolumeSource': '1:diskName:!s 2:diskURI:!s 3:cachingMode:*s 4:fsType:*s 5:readOnly:*b 6:kind:*s',
  'core.AzureFileVolumeSource': '1:secretName:!s 2:shareName:!s 3:readOnly:b',
  'core.Binding': '1:metadata:meta.ObjectMeta 2:target:core.ObjectReference',
  'core.CSIVolumeSource': '1:driver:!s 2:readOnly:*b 3:fsType:*s 4:volumeAttributes:{s:s} 5:nodePublishSecretRef:*core.LocalObjectReference',
  'core.Capabilities': '1:add:[s 2:drop:[s',
  'core.CephFSVolumeSource': '1:monitors:[s 2:path:s 3:user:s 4:secretFile:s 5:secretRef:*core.LocalObjectReference 6:readOnly:b',
  'core.CinderVolumeSource': '1:volumeID:!s 2:fsType:s 3:readOnly:b 4:secretRef:*core.LocalObjectReference',
  'core.ClientIPConfig': '1:timeoutSeconds:*i32',
  'core.ClusterTrustBundleProjection': '1:name:*s 2:signerName:*s 3:labelSelector:*meta.LabelSelector 4:path:!s 5:optional:*b 6:user:*i64',
  'core.ConfigMap': '1:metadata:meta.ObjectMeta 2:data:{s:s} 3:binaryData:{s:bytes} 4:immutable:*b',
  'core.ConfigMapEnvSource': '1:localObjectReference:^core.LocalObjectReference 2:optional:*b',
  'core.ConfigMapKeySelector': '1:localObjectReference:^core.LocalObjectReference 2:key:!s 3:optional:*b',
  'core.ConfigMapNodeConfigSource': '1:namespace:!s 2:name:!s 3:uid:s 4:resourceVersion:s 5:kubeletConfigKey:!s',
  'core.ConfigMapProjection': '1:localObjectReference:^core.LocalObjectReference 2:items:[core.KeyToPath 4:optional:*b',
  'core.ConfigMapVolumeSource': '1:localObjectReference:^core.LocalObjectReference 2:items:[core.KeyToPath 3:defaultMode:*i32 4:optional:*b 5:defaultUser:*i64',
  'core.Container': '1:name:!s 2:image:s 3:command:[s 4:args:[s 5:workingDir:s 6:ports:[core.ContainerPort 7:env:[core.EnvVar 8:resources:core.ResourceRequirements 9:volumeMounts:[core.VolumeMount 10:livenessProbe:*core.Probe 11:readinessProbe:*core.Probe 12:lifecycle:*core.Lifecycle 13:terminationMessagePath:s 14:imagePullPolicy:s 15:securityContext:*core.SecurityContext 16:stdin:b 17:stdinOnce:b 18:tty:b 19:envFrom:[core.EnvFromSource 20:terminationMessagePolicy:s 21:volumeDevices:[core.VolumeDevice 22:startupProbe:*core.Probe 23:resizePolicy:[core.ContainerResizePolicy 24:restartPolicy:*s 25:restartPolicyRules:[core.ContainerRestartRule',
  'core.ContainerExtendedResourceRequest': '1:containerName:!s 2:resourceName:!s 3:requestName:!s',
  'core.ContainerImage': '1:names:[s 2:sizeBytes:i64',
  'core.ContainerPort': '1:name:s 2:hostPort:i32 3:containerPort:!i32 4:protocol:s 5:hostIP:s',
  'core.ContainerResizePolicy': '1:resourceName:!s 2:restartPolicy:!s',
  'core.ContainerRestartRule': '1:action:s 2:exitCodes:*core.ContainerRestartRuleOnExitCodes',
  'core.ContainerRestartRuleOnExitCodes': '1:operator:s 2:values:[i32',
  'core.ContainerState': '1:waiting:*core.ContainerStateWaiting 2:running:*core.ContainerStateRunning 3:terminated:*core.ContainerStateTerminated',
  'core.ContainerStateRunning': '1:startedAt:time',
  'core.ContainerStateTerminated': '1:exitCode:!i32 2:signal:i32 3:reason:s 4:message:s 5:startedAt:time 6:finishedAt:time 7:containerID:s',
  'core.ContainerStateWaiting': '1:reason:s 2:message:s',
  'core.ContainerStatus': '1:name:!s 2:state:core.ContainerState 3:lastState:core.ContainerState 4:ready:!b 5:restartCount:!i32 6:image:!s 7:imageID:!s 8:containerID:s 9:started:*b 10:allocatedResources:{s:qty} 11:resources:*core.ResourceRequirements 12:volumeMounts:[core.VolumeMountStatus 13:user:*core.ContainerUser 14:allocatedResourcesStatus:[core.ResourceStatus 15:stopSignal:*s',
  'core.ContainerUser': '1:linux:*core.LinuxContainerUser',
  'core.DaemonEndpoint': '1:Port:!i32',
  'core.DownwardAPIProjection': '1:items:[core.DownwardAPIVolumeFile',
  'core.DownwardAPIVolumeFile': '1:path:!s 2:fieldRef:*core.ObjectFieldSelector 3:resourceFieldRef:*core.ResourceFieldSelector 4:mode:*i32 5:user:*i64',
  'core.DownwardAPIVolumeSource': '1:items:[core.DownwardAPIVolumeFile 2:defaultMode:*i32 3:defaultUser:*i64',
  'core.EmptyDirVolumeSource': '1:medium:s 2:sizeLimit:*qty 3:mode:*i32',
  'core.EndpointAddress': '1:ip:!s 2:targetRef:*core.ObjectReference 3:hostname:s 4:nodeName:*s',
  'core.EndpointPort': '1:name:s 2:port:!i32 3:protocol:s 4:appProtocol:*s',
  'core.EndpointSubset': '1:addresses:[core.EndpointAddress 2:notReadyAddresses:[core.EndpointAddress 3:ports:[core.EndpointPort',
  'core.Endpoints': '1:metadata:meta.ObjectMeta 2:subsets:[core.EndpointSubset',
  'core.EnvFromSource': '1:prefix:s 2:configMapRef:*core.ConfigMapEnvSource 3:secretRef:*core.SecretEnvSource',
  'core.EnvVar': '1:name:!s 2:value:s 3:valueFrom:*core.EnvVarSource',
  'core.EnvVarSource': '1:fieldRef:*core.ObjectFieldSelector 2:resourceFieldRef:*core.ResourceFieldSelector 3:configMapKeyRef:*core.ConfigMapKeySelector 4:secretKeyRef:*core.SecretKeySelector 5:fileKeyRef:*core.FileKeySelector',
  'core.EphemeralContainer': '1:ephemeralContainerCommon:^core.EphemeralContainerCommon 2:targetContainerName:s',
  'core.EphemeralContainerCommon': '1:name:!s 2:image:s 3:command:[s 4:args:[s 5:workingDir:s 6:ports:[core.ContainerPort 7:env:[core.EnvVar 8:resources:core.ResourceRequirements 9:volumeMounts:[core.VolumeMount 10:livenessProbe:*core.Probe 11:readinessProbe:*core.Probe 12:lifecycle:*core.Lifecycle 13:terminationMessagePath:s 14:imagePullPolicy:s 15:securityContext:*core.SecurityContext 16:stdin:b 17:stdinOnce:b 18:tty:b 19:envFrom:[core.EnvFromSource 20:terminationMessagePolicy:s 21:volumeDevices:[core.VolumeDevice 22:startupProbe:*core.Probe 23:resizePolicy:[core.ContainerResizePolicy 24:restartPolicy:*s 25:restartPolicyRules:[core.ContainerRestartRule',
  'core.EphemeralVolumeSource': '1:volumeClaimTemplate:*core.PersistentVolumeClaimTemplate',
  'core.Event': '1:metadata:meta.ObjectMeta 2:involvedObject:core.ObjectReference 3:reason:s 4:message:s 5:source:core.EventSource 6:firstTimestamp:time 7:lastTimestamp:time 8:count:i32 9:type:s 10:eventTime:mtime 11:series:*core.EventSeries 12:action:s 13:related:*core.ObjectReference 14:reportingComponent:!s 15:reportingInstance:!s',
  'core.EventSeries': '1:count:i32 2:lastObservedTime:mtime',
  'core.EventSource': '1:component:s 2:host:s',
  'core.EvictionResponder': '1:name:!s 2:priority:*i32',
  'core.ExecAction': '1:command:[s',
  'core.FCVolumeSource': '1:targetWWNs:[s 2:lun:*i32 3:fsType:s 4:readOnly:b 5:wwids:[s',
  'core.FileKeySelector': '1:volumeName:!s 2:path:!s 3:key:!s 4:optional:*b',
  'core.FlexVolumeSource': '1:driver:!s 2:fsType:s 3:secretRef:*core.LocalObjectReference 4:readOnly:b 5:options:{s:s}',
  'core.FlockerVolumeSource': '1:datasetName:s 2:datasetUUID:s',
  'core.GCEPersistentDiskVolumeSource': '1:pdName:!s 2:fsType:s 3:partition:i32 4:readOnly:b',
  'core.GRPCAction': '1:port:!i32 2:service:*s 3:mode:*s',
  'core.GitRepoVolumeSource': '1:repository:!s 2:revision:s 3:directory:s',
  'core.GlusterfsVolumeSource': '1:endpoints:!s 2:path:!s 3:readOnly:b',
  'core.HTTPGetAction': '1:path:s 2:port:ios 3:host:s 4:scheme:s 5:httpHeaders:[core.HTTPHeader 6:protocol:*s',
  'core.HTTPHeader': '1:name:!s 2:value:!s',
  'core.HostAlias': '1:ip:!s 2:hostnames:[s',
  'core.HostIP': '1:ip:!s',
  'core.HostPathVolumeSource': '1:path:!s 2:type:*s',
  'core.ISCSIVolumeSource': '1:targetPortal:!s 2:iqn:!s 3:lun:!i32 4:iscsiInterface:s 5:fsType:s 6:readOnly:b 7:portals:[s 8:chapAuthDiscovery:b 10:secretRef:*core.LocalObjectReference 11:chapAuthSession:b 12:initiatorName:*s',
  'core.ImageVolumeSource': '1:reference:s 2:pullPolicy:s',
  'core.ImageVolumeStatus': '1:imageRef:s',
  'core.KeyToPath': '1:key:!s 2:path:!s 3:mode:*i32 4:user:*i64',
  'core.Lifecycle': '1:postStart:*core.LifecycleHandler 2:preStop:*core.LifecycleHandler 3:stopSignal:*s',
  'core.LifecycleHandler': '1:exec:*core.ExecAction 2:httpGet:*core.HTTPGetAction 3:tcpSocket:*core.TCPSocketAction 4:sleep:*core.SleepAction',
  'core.LimitRange': '1:metadata:meta.ObjectMeta 2:spec:core.LimitRangeSpec',
  'core.LimitRangeItem': '1:type:!s 2:max:{s:qty} 3:min:{s:qty} 4:default:{s:qty} 5:defaultRequest:{s:qty} 6:maxLimitRequestRatio:{s:qty}',
  'core.LimitRangeSpec': '1:limits:![core.LimitRangeItem',
  'core.LinuxContainerUser': '1:uid:!i64 2:gid:!i64 3:supplementalGroups:[i64',
  'core.LoadBalancerIngress': '1:ip:s 2:hostname:s 3:ipMode:*s 4:ports:[core.PortStatus',
  'core.LoadBalancerStatus': '1:ingress:[core.LoadBalancerIngress',
  'core.LocalObjectReference': '1:name:s',
  'core.NFSVolumeSource': '1:server:!s 2:path:!s 3:readOnly:b',
  'core.Namespace': '1:metadata:meta.ObjectMeta 2:spec:core.NamespaceSpec 3:status:core.NamespaceStatus',
  'core.NamespaceCondition': '1:type:!s 2:status:!s 4:lastTransitionTime:time 5:reason:s 6:message:s',
  'core.NamespaceSpec': '1:finalizers:[s',
  'core.NamespaceStatus': '1:phase:s 2:conditions:[core.NamespaceCondition',
  'core.Node': '1:metadata:meta.ObjectMeta 2:spec:core.NodeSpec 3:status:core.NodeStatus',
  'core.NodeAddress': '1:type:!s 2:address:!s',
  'core.NodeAffinity': '1:requiredDuringSchedulingIgnoredDuringExecution:*core.NodeSelector 2:preferredDuringSchedulingIgnoredDuringExecution:[core.PreferredSchedulingTerm',
  'core.NodeAllocatableMappedResources': '1:name:!s 2:quantity:*qty',
  'core.NodeAllocatableOverheadResources': '1:name:!s 2:perPod:*qty 3:perContainer:*qty',
  'core.NodeAllocatableResourceClaimStatus': '1:resourceClaimName:!s 2:containers:[s 4:mapping:[core.NodeAllocatableMappedResources 5:overhead:[core.NodeAllocatableOverheadResources',
  'core.NodeCondition': '1:type:!s 2:status:!s 3:lastHeartbeatTime:time 4:lastTransitionTime:time 5:reason:s 6:message:s',
  'core.NodeConfigSource': '2:configMap:*core.ConfigMapNodeConfigSource',
  'core.NodeConfigStatus': '1:assigned:*core.NodeConfigSource 2:active:*core.NodeConfigSource 3:lastKnownGood:*core.NodeConfigSource 4:error:s',
  'core.NodeDaemonEndpoints': '1:kubeletEndpoint:core.DaemonEndpoint',
  'core.NodeFeatures': '1:supplementalGroupsPolicy:*b',
  'core.NodePodPreemptionPolicy': '1:disableResizePreemption:[s',
  'core.NodeRuntimeHandler': '1:name:!s 2:features:*core.NodeRuntimeHandlerFeatures',
  'core.NodeRuntimeHandlerFeatures': '1:recursiveReadOnlyMounts:*b 2:userNamespaces:*b',
  'core.NodeSelector': '1:nodeSelectorTerms:[core.NodeSelectorTerm',
  'core.NodeSelectorRequirement': '1:key:!s 2:operator:!s 3:values:[s',
  'core.NodeSelectorTerm': '1:matchExpressions:[core.NodeSelectorRequirement 2:matchFields:[core.NodeSelectorRequirement',
  'core.NodeSpec': '1:podCIDR:s 2:externalID:s 3:providerID:s 4:unschedulable:b 5:taints:[core.Taint 6:configSource:*core.NodeConfigSource 7:podCIDRs:[s 8:podPreemptionPolicy:*core.NodePodPreemptionPolicy',
  'core.NodeStatus': '1:capacity:{s:qty} 2:allocatable:{s:qty} 3:phase:s 4:conditions:[core.NodeCondition 5:addresses:[core.NodeAddress 6:daemonEndpoints:core.NodeDaemonEndpoints 7:nodeInfo:core.NodeSystemInfo 8:images:[core.ContainerImage 9:volumesInUse:[s 10:volumesAttached:[core.AttachedVolume 11:config:*core.NodeConfigStatus 12:runtimeHandlers:[core.NodeRuntimeHandler 13:features:*core.NodeFeatures 14:declaredFeatures:[s',
  'core.NodeSwapStatus': '1:capacity:*i64',
  'core.NodeSystemInfo': '1:machineID:!s 2:systemUUID:!s 3:bootID:!s 4:kernelVersion:!s 5:osImage:!s 6:containerRuntimeVersion:!s 7:kubeletVersion:!s 8:kubeProxyVersion:!s 9:operatingSystem:!s 10:architecture:!s 11:swap:*core.NodeSwapStatus',
  'core.ObjectFieldSelector': '1:apiVersion:s 2:fieldPath:!s',
  'core.ObjectReference': '1:kind:s 2:namespace:s 3:name:s 4:uid:s 5:apiVersion:s 6:resourceVersion:s 7:fieldPath:s',
  'core.PersistentVolumeClaimSpec': '1:accessModes:[s 2:resources:core.VolumeResourceRequirements 3:volumeName:s 4:selector:*meta.LabelSelector 5:storageClassName:*s 6:volumeMode:*s 7:dataSource:*core.TypedLocalObjectReference 8:dataSourceRef:*core.TypedObjectReference 9:volumeAttributesClassName:*s',
  'core.PersistentVolumeClaimTemplate': '1:metadata:meta.ObjectMeta 2:spec:core.PersistentVolumeClaimSpec',
  'core.PersistentVolumeClaimVolumeSource': '1:claimName:!s 2:readOnly:b',
  'core.PhotonPersistentDiskVolumeSource': '1:pdID:!s 2:fsType:s',
  'core.Pod': '1:metadata:meta.ObjectMeta 2:spec:core.PodSpec 3:status:core.PodStatus',
  'core.PodAffinity': '1:requiredDuringSchedulingIgnoredDuringExecution:[core.PodAffinityTerm 2:preferredDuringSchedulingIgnoredDuringExecution:[core.WeightedPodAffinityTerm',
  'core.PodAffinityTerm': '1:labelSelector:*meta.LabelSelector 2:namespaces:[s 3:topologyKey:!s 4:namespaceSelector:*meta.LabelSelector 5:matchLabelKeys:[s 6:mismatchLabelKeys:[s',
  'core.PodAntiAffinity': '1:requiredDuringSchedulingIgnoredDuringExecution:[core.PodAffinityTerm 2:preferredDuringSchedulingIgnoredDuringExecution:[core.WeightedPodAffinityTerm',
  'core.PodCertificateProjection': '1:signerName:s 2:keyType:s 3:maxExpirationSeconds:*i32 4:credentialBundlePath:s 5:keyPath:s 6:certificateChainPath:s 7:userAnnotations:{s:s} 8:user:*i64',
  'core.PodCondition': '1:type:!s 2:status:!s 3:lastProbeTime:time 4:lastTransitionTime:time 5:reason:s 6:message:s 7:observedGeneration:i64',
  'core.PodDNSConfig': '1:nameservers:[s 2:searches:[s 3:options:[core.PodDNSConfigOption',
  'core.PodDNSConfigOption': '1:name:s 2:value:*s',
  'core.PodExtendedResourceClaimStatus': '1:requestMappings:[core.ContainerExtendedResourceRequest 2:resourceClaimName:!s',
  'core.PodIP': '1:ip:!s',
  'core.PodOS': '1:name:!s',
  'core.PodReadinessGate': '1:conditionType:!s',
  'core.PodResourceClaim': '1:name:!s 3:resourceClaimName:*s 4:resourceClaimTemplateName:*s',
  'core.PodResourceClaimStatus': '1:name:!s 2:resourceClaimName:*s',
  'core.PodSchedulingGate': '1:name:!s',
  'core.PodSchedulingGroup': '1:podGroupName:*s',
  'core.PodSecurityContext': '1:seLinuxOptions:*core.SELinuxOptions 2:runAsUser:*i64 3:runAsNonRoot:*b 4:supplementalGroups:[i64 5:fsGroup:*i64 6:runAsGroup:*i64 7:sysctls:[core.Sysctl 8:windowsOptions:*core.WindowsSecurityContextOptions 9:fsGroupChangePolicy:*s 10:seccompProfile:*core.SeccompProfile 11:appArmorProfile:*core.AppArmorProfile 12:supplementalGroupsPolicy:*s 13:seLinuxChangePolicy:*s',
  'core.PodSpec': '1:volumes:[core.Volume 2:containers:[core.Container 3:restartPolicy:s 4:terminationGracePeriodSeconds:*i64 5:activeDeadlineSeconds:*i64 6:dnsPolicy:s 7:nodeSelector:{s:s} 8:serviceAccountName:s 9:serviceAccount:s 10:nodeName:s 11:hostNetwork:b 12:hostPID:b 13:hostIPC:b 14:securityContext:*core.PodSecurityContext 15:imagePullSecrets:[core.LocalObjectReference 16:hostname:s 17:subdomain:s 18:affinity:*core.Affinity 19:schedulerName:s 20:initContainers:[core.Container 21:automountServiceAccountToken:*b 22:tolerations:[core.Toleration 23:hostAliases:[core.HostAlias 24:priorityClassName:s 25:priority:*i32 26:dnsConfig:*core.PodDNSConfig 27:shareProcessNamespace:*b 28:readinessGates:[core.PodReadinessGate 29:runtimeClassName:*s 30:enableServiceLinks:*b 31:preemptionPolicy:*s 32:overhead:{s:qty} 33:topologySpreadConstraints:[core.TopologySpreadConstraint 34:ephemeralContainers:[core.EphemeralContainer 35:setHostnameAsFQDN:*b 36:os:*core.PodOS 37:hostUsers:*b 38:schedulingGates:[core.PodSchedulingGate 39:resourceClaims:[core.PodResourceClaim 40:resources:*core.ResourceRequirements 41:hostnameOverride:*s 43:schedulingGroup:*core.PodSchedulingGroup 44:evictionResponders:[core.EvictionResponder',
  'core.PodStatus': '1:phase:s 2:conditions:[core.PodCondition 3:message:s 4:reason:s 5:hostIP:s 6:podIP:s 7:startTime:*time 8:containerStatuses:[core.ContainerStatus 9:qosClass:s 10:initContainerStatuses:[core.ContainerStatus 11:nominatedNodeName:s 12:podIPs:[core.PodIP 13:ephemeralContainerStatuses:[core.ContainerStatus 14:resize:s 15:resourceClaimStatuses:[core.PodResourceClaimStatus 16:hostIPs:[core.HostIP 17:observedGeneration:i64 18:extendedResourceClaimStatus:*core.PodExtendedResourceClaimStatus 19:allocatedResources:{s:qty} 20:resources:*core.ResourceRequirements 21:nodeAllocatableResourceClaimStatuses:[core.NodeAllocatableResourceClaimStatus 22:volumeHealth:[core.PodVolumeHealth',
  'core.PodTemplateSpec': '1:metadata:meta.ObjectMeta 2:spec:core.PodSpec',
  'core.PodVolumeHealth': '1:name:!s 2:healthConditions:[core.VolumeHealthCondition 3:lastTransitionTime:time',
  'core.PortStatus': '1:port:!i32 2:protocol:!s 3:error:*s',
  'core.PortworxVolumeSource': '1:volumeID:!s 2:fsType:s 3:readOnly:b',
  'core.PreferredSchedulingTerm': '1:weight:!i32 2:preference:core.NodeSelectorTerm',
  'core.Probe': '1:handler:^core.ProbeHandler 2:initialDelaySeconds:i32 3:timeoutSeconds:i32 4:periodSeconds:i32 5:successThreshold:i32 6:failureThreshold:i32 7:terminationGracePeriodSeconds:*i64',
  'core.ProbeHandler': '1:exec:*core.ExecAction 2:httpGet:*core.HTTPGetAction 3:tcpSocket:*core.TCPSocketAction 4:grpc:*core.GRPCAction',
  'core.ProjectedVolumeSource': '1:sources:[core.VolumeProjection 2:defaultMode:*i32 3:defaultUser:*i64',
  'core.QuobyteVolumeSource': '1:registry:!s 2:volume:!s 3:readOnly:b 4:user:s 5:group:s 6:tenant:s',
  'core.RBDVolumeSource': '1:monitors:[s 2:image:!s 3:fsType:s 4:pool:s 5:user:s 6:keyring:s 7:secretRef:*core.LocalObjectReference 8:readOnly:b',
  'core.ResourceClaim': '1:name:!s 2:request:s',
  'core.ResourceFieldSelector': '1:containerName:s 2:resource:!s 3:divisor:qty',
  'core.ResourceHealth': '1:resourceID:!s 2:health:s 6:message:*s',
  'core.ResourceQuota': '1:metadata:meta.ObjectMeta 2:spec:core.ResourceQuotaSpec 3:status:core.ResourceQuotaStatus',
  'core.ResourceQuotaSpec': '1:hard:{s:qty} 2:scopes:[s 3:scopeSelector:*core.ScopeSelector',
  'core.ResourceQuotaStatus': '1:hard:{s:qty} 2:used:{s:qty}',
  'core.ResourceRequirements': '1:limits:{s:qty} 2:requests:{s:qty} 3:claims:[core.ResourceClaim',
  'core.ResourceStatus': '1:name:!s 2:resources:[core.ResourceHealth',
  'core.SELinuxOptions': '1:user:s 2:role:s 3:type:s 4:level:s',
  'core.ScaleIOVolumeSource': '1:gateway:!s 2:system:!s 3:secretRef:*core.LocalObjectReference 4:sslEnabled:b 5:protectionDomain:s 6:storagePool:s 7:storageMode:s 8:volumeName:s 9:fsType:s 10:readOnly:b',
  'core.ScopeSelector': '1:matchExpressions:[core.ScopedResourceSelectorRequirement',
  'core.ScopedResourceSelectorRequirement': '1:scopeName:!s 2:operator:!s 3:values:[s',
  'core.SeccompProfile': '1:type:!s 2:localhostProfile:*s',
  'core.Secret': '1:metadata:meta.ObjectMeta 2:data:{s:bytes} 3:type:s 4:stringData:{s:s} 5:immutable:*b',
  'core.SecretEnvSource': '1:localObjectReference:^core.LocalObjectReference 2:optional:*b',
  'core.SecretKeySelector': '1:localObjectReference:^core.LocalObjectReference 2:key:!s 3:optional:*b',
  'core.SecretProjection': '1:localObjectReference:^core.LocalObjectReference 2:items:[core.KeyToPath 4:optional:*b',
  'core.SecretVolumeSource': '1:secretName:s 2:items:[core.KeyToPath 3:defaultMode:*i32 4:optional:*b 5:defaultUser:*i64',
  'core.SecurityContext': '1:capabilities:*core.Capabilities 2:privileged:*b 3:seLinuxOptions:*core.SELinuxOptions 4:runAsUser:*i64 5:runAsNonRoot:*b 6:readOnlyRootFilesystem:*b 7:allowPrivilegeEscalation:*b 8:runAsGroup:*i64 9:procMount:*s 10:windowsOptions:*core.WindowsSecurityContextOptions 11:seccompProfile:*core.SeccompProfile 12:appArmorProfile:*core.AppArmorProfile',
  'core.Service': '1:metadata:meta.ObjectMeta 2:spec:core.ServiceSpec 3:status:core.ServiceStatus',
  'core.ServiceAccount': '1:metadata:meta.ObjectMeta 2:secrets:[core.ObjectReference 3:imagePullSecrets:[core.LocalObjectReference 4:automountServiceAccountToken:*b',
  'core.ServiceAccountTokenProjection': '1:audience:s 2:expirationSeconds:*i64 3:path:!s 4:user:*i64',
  'core.ServicePort': '1:name:s 2:protocol:s 3:port:!i32 4:targetPort:ios 5:nodePort:i32 6:appProtocol:*s',
  'core.ServiceSpec': '1:ports:[core.ServicePort 2:selector:{s:s} 3:clusterIP:s 4:type:s 5:externalIPs:[s 7:sessionAffinity:s 8:loadBalancerIP:s 9:loadBalancerSourceRanges:[s 10:externalName:s 11:externalTrafficPolicy:s 12:healthCheckNodePort:i32 13:publishNotReadyAddresses:b 14:sessionAffinityConfig:*core.SessionAffinityConfig 17:ipFamilyPolicy:*s 18:clusterIPs:[s 19:ipFamilies:[s 20:allocateLoadBalancerNodePorts:*b 21:loadBalancerClass:*s 22:internalTrafficPolicy:*s 23:trafficDistribution:*s',
  'core.ServiceStatus': '1:loadBalancer:core.LoadBalancerStatus 2:conditions:[meta.Condition',
  'core.SessionAffinityConfig': '1:clientIP:*core.ClientIPConfig',
  'core.SleepAction': '1:seconds:!i64',
  'core.StorageOSVolumeSource': '1:volumeName:s 2:volumeNamespace:s 3:fsType:s 4:readOnly:b 5:secretRef:*core.LocalObjectReference',
  'core.Sysctl': '1:name:!s 2:value:!s',
  'core.TCPSocketAction': '1:port:ios 2:host:s',
  'core.Taint': '1:key:!s 2:value:s 3:effect:!s 4:timeAdded:*time',
  'core.Toleration': '1:key:s 2:operator:s 3:value:s 4:effect:s 5:tolerationSeconds:*i64',
  'core.TopologySpreadConstraint': '1:maxSkew:!i32 2:topologyKey:!s 3:whenUnsatisfiable:!s 4:labelSelector:*meta.LabelSelector 5:minDomains:*i32 6:nodeAffinityPolicy:*s 7:nodeTaintsPolicy:*s 8:matchLabelKeys:[s',
  'core.TypedLocalObjectReference': '1:apiGroup:*s 2:kind:!s 3:name:!s',
  'core.TypedObjectReference': '1:apiGroup:*s 2:kind:!s 3:name:!s 4:namespace:*s',
  'core.Volume': '1:name:!s 2:volumeSource:^core.VolumeSource',
  'core.VolumeDevice': '1:name:!s 2:devicePath:!s',
  'core.VolumeHealthCondition': '1:status:!s 2:reason:!s 3:message:s',
  'core.VolumeMount': '1:name:!s 2:readOnly:b 3:mountPath:!s 4:subPath:s 5:mountPropagation:*s 6:subPathExpr:s 7:recursiveReadOnly:*s 8:bindMountOptions:[s',
  'core.VolumeMountStatus': '1:name:!s 2:mountPath:!s 3:readOnly:b 4:recursiveReadOnly:*s 5:volumeStatus:*core.VolumeStatus',
  'core.VolumeProjection': '1:secret:*core.SecretProjection 2:downwardAPI:*core.DownwardAPIProjection 3:configMap:*core.ConfigMapProjection 4:serviceAccountToken:*core.ServiceAccountTokenProjection 5:clusterTrustBundle:*core.ClusterTrustBundleProjection 6:podCertificate:*core.PodCertificateProjection',
  'core.VolumeResourceRequirements': '1:limits:{s:qty} 2:requests:{s:qty}',
  'core.VolumeSource': '1:hostPath:*core.HostPathVolumeSource 2:emptyDir:*core.EmptyDirVolumeSource 3:gcePersistentDisk:*core.GCEPersistentDiskVolumeSource 4:awsElasticBlockStore:*core.AWSElasticBlockStoreVolumeSource 5:gitRepo:*core.GitRepoVolumeSource 6:secret:*core.SecretVolumeSource 7:nfs:*core.NFSVolumeSource 8:iscsi:*core.ISCSIVolumeSource 9:glusterfs:*core.GlusterfsVolumeSource 10:persistentVolumeClaim:*core.PersistentVolumeClaimVolumeSource 11:rbd:*core.RBDVolumeSource 12:flexVolume:*core.FlexVolumeSource 13:cinder:*core.CinderVolumeSource 14:cephfs:*core.CephFSVolumeSource 15:flocker:*core.FlockerVolumeSource 16:downwardAPI:*core.DownwardAPIVolumeSource 17:fc:*core.FCVolumeSource 18:azureFile:*core.AzureFileVolumeSource 19:configMap:*core.ConfigMapVolumeSource 20:vsphereVolume:*core.VsphereVirtualDiskVolumeSource 21:quobyte:*core.QuobyteVolumeSource 22:azureDisk:*core.AzureDiskVolumeSource 23:photonPersistentDisk:*core.PhotonPersistentDiskVolumeSource 24:portworxVolume:*core.PortworxVolumeSource 25:scaleIO:*core.ScaleIOVolumeSource 26:projected:*core.ProjectedVolumeSource 27:storageos:*core.StorageOSVolumeSource 28:csi:*core.CSIVolumeSource 29:ephemeral:*core.EphemeralVolumeSource 30:image:*core.ImageVolumeSource',
  'core.VolumeStatus': '1:image:*core.ImageVolumeStatus',
  'core.VsphereVirtualDiskVolumeSource': '1:volumePath:!s 2:fsType:s 3:storagePolicyName:s 4:storagePolicyID:s',
  'core.WeightedPodAffinityTerm': '1:weight:!i32 2:podAffinityTerm:core.PodAffinityTerm',
  'core.WindowsSecurityContextOptions': '1:gmsaCredentialSpecName:*s 2:gmsaCredentialSpec:*s 3:runAsUserName:*s 4:hostProcess:*b',
  'apps.Deployment': '1:metadata:meta.ObjectMeta 2:spec:apps.DeploymentSpec 3:status:apps.DeploymentStatus',
  'apps.DeploymentCondition': '1:type:!s 2:status:!s 4:reason:s 5:message:s 6:lastUpdateTime:time 7:lastTransitionTime:time',
  'apps.DeploymentSpec': '1:replicas:*i32 2:selector:*meta.LabelSelector 3:template:core.PodTemplateSpec 4:strategy:apps.DeploymentStrategy 5:minReadySeconds:i32 6:revisionHistoryLimit:*i32 7:paused:b 9:progressDeadlineSeconds:*i32',
  'apps.DeploymentStatus': '1:observedGeneration:i64 2:replicas:i32 3:updatedReplicas:i32 4:availableReplicas:i32 5:unavailableReplicas:i32 6:conditions:[apps.DeploymentCondition 7:readyReplicas:i32 8:collisionCount:*i32 9:terminatingReplicas:*i32',
  'apps.DeploymentStrategy': '1:type:s 2:rollingUpdate:*apps.RollingUpdateDeployment',
  'apps.ReplicaSet': '1:metadata:meta.ObjectMeta 2:spec:apps.ReplicaSetSpec 3:status:apps.ReplicaSetStatus',
  'apps.ReplicaSetCondition': '1:type:!s 2:status:!s 3:lastTransitionTime:time 4:reason:s 5:message:s',
  'apps.ReplicaSetSpec': '1:replicas:*i32 2:selector:*meta.LabelSelector 3:template:core.PodTemplateSpec 4:minReadySeconds:i32',
  'apps.ReplicaSetStatus': '1:replicas:!i32 2:fullyLabeledReplicas:i32 3:observedGeneration:i64 4:readyReplicas:i32 5:availableReplicas:i32 6:conditions:[apps.ReplicaSetCondition 7:terminatingReplicas:*i32',
  'apps.RollingUpdateDeployment': '1:maxUnavailable:*ios 2:maxSurge:*ios',
  'discovery.Endpoint': '1:addresses:[s 2:conditions:discovery.EndpointConditions 3:hostname:*s 4:targetRef:*core.ObjectReference 5:deprecatedTopology:{s:s} 6:nodeName:*s 7:zone:*s 8:hints:*discovery.EndpointHints',
  'discovery.EndpointConditions': '1:ready:*b 2:serving:*b 3:terminating:*b',
  'discovery.EndpointHints': '1:forZones:[discovery.ForZone 2:forNodes:[discovery.ForNode',
  'discovery.EndpointPort': '1:name:*s 2:protocol:*s 3:port:*i32 4:appProtocol:*s',
  'discovery.EndpointSlice': '1:metadata:meta.ObjectMeta 2:endpoints:[discovery.Endpoint 3:ports:[discovery.EndpointPort 4:addressType:!s',
  'discovery.ForNode': '1:name:!s',
  'discovery.ForZone': '1:name:!s',
  'coordination.Lease': '1:metadata:meta.ObjectMeta 2:spec:coordination.LeaseSpec',
  'scheduling.PriorityClass': '1:metadata:meta.ObjectMeta 2:value:!i32 3:globalDefault:b 4:description:s 5:preemptionPolicy:*s',
  'coordination.LeaseSpec': '1:holderIdentity:*s 2:leaseDurationSeconds:*i32 3:acquireTime:*mtime 4:renewTime:*mtime 5:leaseTransitions:*i32 6:strategy:*s 7:preferredHolder:*s',
  // Read-only here (writes are 405), listed so that every served kind has its table.
  'networking.IPAddress': '1:metadata:meta.ObjectMeta 2:spec:networking.IPAddressSpec',
  'networking.IPAddressSpec': '1:parentRef:*networking.ParentReference',
  'networking.ParentReference': '1:group:s 2:resource:!s 3:namespace:s 4:name:!s',
  'autoscaling.Scale': '1:metadata:meta.ObjectMeta 2:spec:autoscaling.ScaleSpec 3:status:autoscaling.ScaleStatus',
  'autoscaling.ScaleSpec': '1:replicas:i32',
  'autoscaling.ScaleStatus': '1:replicas:!i32 2:selector:s',
  'rbac.AggregationRule': '1:clusterRoleSelectors:[meta.LabelSelector',
  'rbac.ClusterRole': '1:metadata:meta.ObjectMeta 2:rules:![rbac.PolicyRule 3:aggregationRule:*rbac.AggregationRule',
  'rbac.ClusterRoleBinding': '1:metadata:meta.ObjectMeta 2:subjects:[rbac.Subject 3:roleRef:rbac.RoleRef',
  'rbac.PolicyRule': '1:verbs:![s 2:apiGroups:[s 3:resources:[s 4:resourceNames:[s 5:nonResourceURLs:[s',
  'rbac.Role': '1:metadata:meta.ObjectMeta 2:rules:![rbac.PolicyRule',
  'rbac.RoleBinding': '1:metadata:meta.ObjectMeta 2:subjects:[rbac.Subject 3:roleRef:rbac.RoleRef',
  'rbac.RoleRef': '1:apiGroup:!s 2:kind:!s 3:name:!s',
  'rbac.Subject': '1:kind:!s 2:apiGroup:s 3:name:!s 4:namespace:s',
  // The reviews are answered, never stored; a request's status is sent as written (kubectl sends it zero).
  'authorization.FieldSelectorAttributes': '1:rawSelector:s 2:requirements:[meta.FieldSelectorRequirement',
  'authorization.LabelSelectorAttributes': '1:rawSelector:s 2:requirements:[meta.LabelSelectorRequirement',
  'authorization.LocalSubjectAccessReview': '1:metadata:meta.ObjectMeta 2:spec:authorization.SubjectAccessReviewSpec 3:status:authorization.SubjectAccessReviewStatus',
  'authorization.NonResourceAttributes': '1:path:s 2:verb:s',
  'authorization.NonResourceRule': '1:verbs:![s 2:nonResourceURLs:[s',
  'authorization.ResourceAttributes': '1:namespace:s 2:verb:s 3:group:s 4:version:s 5:resource:s 6:subresource:s 7:name:s 8:fieldSelector:*authorization.FieldSelectorAttributes 9:labelSelector:*authorization.LabelSelectorAttributes',
  'authorization.ResourceRule': '1:verbs:![s 2:apiGroups:[s 3:resources:[s 4:resourceNames:[s',
  'authorization.SelfSubjectAccessReview': '1:metadata:meta.ObjectMeta 2:spec:authorization.SelfSubjectAccessReviewSpec 3:status:authorization.SubjectAccessReviewStatus',
  'authorization.SelfSubjectAccessReviewSpec': '1:resourceAttributes:*authorization.ResourceAttributes 2:nonResourceAttributes:*authorization.NonResourceAttributes',
  'authorization.SelfSubjectRulesReview': '1:metadata:meta.ObjectMeta 2:spec:authorization.SelfSubjectRulesReviewSpec 3:status:authorization.SubjectRulesReviewStatus',
  'authorization.SelfSubjectRulesReviewSpec': '1:namespace:s',
  'authorization.SubjectAccessReview': '1:metadata:meta.ObjectMeta 2:spec:authorization.SubjectAccessReviewSpec 3:status:authorization.SubjectAccessReviewStatus',
  'authorization.SubjectAccessReviewSpec': '1:resourceAttributes:*authorization.ResourceAttributes 2:nonResourceAttributes:*authorization.NonResourceAttributes 3:user:s 4:groups:[s 5:extra:{s:strs} 6:uid:s',
  'authorization.SubjectAccessReviewStatus': '1:allowed:!b 2:reason:s 3:evaluationError:s 4:denied:b',
  'authorization.SubjectRulesReviewStatus': '1:resourceRules:![authorization.ResourceRule 2:nonResourceRules:![authorization.NonResourceRule 3:incomplete:!b 4:evaluationError:s',
  'authentication.BoundObjectReference': '1:kind:s 2:apiVersion:s 3:name:s 4:uid:s',
  'authentication.SelfSubjectReview': '1:metadata:meta.ObjectMeta 2:status:authentication.SelfSubjectReviewStatus',
  'authentication.SelfSubjectReviewStatus': '1:userInfo:authentication.UserInfo',
  'authentication.TokenRequest': '1:metadata:meta.ObjectMeta 2:spec:authentication.TokenRequestSpec 3:status:authentication.TokenRequestStatus',
  'authentication.TokenRequestSpec': '1:audiences:![s 3:boundObjectRef:*authentication.BoundObjectReference 4:expirationSeconds:*i64 5:attestations:{s:strs}',
  'authentication.TokenRequestStatus': '1:token:!s 2:expirationTimestamp:time',
  'authentication.TokenReview': '1:metadata:meta.ObjectMeta 2:spec:authentication.TokenReviewSpec 3:status:authentication.TokenReviewStatus',
  'authentication.TokenReviewSpec': '1:token:s 2:audiences:[s',
  'authentication.TokenReviewStatus': '1:authenticated:b 2:user:authentication.UserInfo 3:error:s 4:audiences:[s',
  'authentication.UserInfo': '1:username:s 2:uid:s 3:groups:[s 4:extra:{s:strs}',
  'meta.Condition': '1:type:!s 2:status:!s 3:observedGeneration:i64 4:lastTransitionTime:time 5:reason:!s 6:message:!s',
  'meta.DeleteOptions': '1:gracePeriodSeconds:*i64 2:preconditions:*meta.Preconditions 3:orphanDependents:*b 4:propagationPolicy:*s 5:dryRun:[s 6:ignoreStoreReadErrorWithClusterBreakingPotential:*b',
  'meta.FieldSelectorRequirement': '1:key:!s 2:operator:!s 3:values:[s',
  'meta.LabelSelector': '1:matchLabels:{s:s} 2:matchExpressions:[meta.LabelSelectorRequirement',
  'meta.LabelSelectorRequirement': '1:key:!s 2:operator:!s 3:values:[s',
  'meta.ManagedFieldsEntry': '1:manager:s 2:operation:s 3:apiVersion:s 4:time:*time 6:fieldsType:s 7:fieldsV1:*f1 8:subresource:s',
  'meta.ObjectMeta': '1:name:s 2:generateName:s 3:namespace:s 4:selfLink:s 5:uid:s 6:resourceVersion:s 7:generation:i64 8:creationTimestamp:time 9:deletionTimestamp:*time 10:deletionGracePeriodSeconds:*i64 11:labels:{s:s} 12:annotations:{s:s} 13:ownerReferences:[meta.OwnerReference 14:finalizers:[s 17:managedFields:[meta.ManagedFieldsEntry',
  'meta.OwnerReference': '1:kind:!s 3:name:!s 4:uid:!s 5:apiVersion:!s 6:controller:*b 7:blockOwnerDeletion:*b',
  'meta.Preconditions': '1:uid:*s 2:resourceVersion:*s',
};

const SCALARS = new Set<string>(['s', 'i32', 'i64', 'b', 'bytes']);
const SPECIALS = new Set<string>(['time', 'mtime', 'qty', 'ios', 'f1', 'strs']);

function parseType(text: string, where: string): FieldType {
  const map = /^\{(\w+):(.+)\}$/.exec(text);
  if (map) {
    if (!SCALARS.has(map[1]!)) throw new Error(`protobuf-schema: ${where}: a map key must be a scalar`);
    return { t: 'map', key: map[1] as ScalarType, value: parseType(map[2]!, where) };
  }
  if (SCALARS.has(text)) return { t: 'scalar', s: text as ScalarType };
  if (SPECIALS.has(text)) return { t: 'special', s: text as SpecialType };
  if (TABLE[text] === undefined) throw new Error(`protobuf-schema: ${where}: unknown message ${text}`);
  return { t: 'message', name: text };
}

const SHAPES: Record<string, FieldShape> = { '!': 'always', '*': 'pointer', '[': 'repeated', '![': 'repeatedAlways', '^': 'inline' };

function parseMessage(name: string): MessageSpec {
  const line = TABLE[name];
  if (line === undefined) throw new Error(`protobuf-schema: unknown message ${name}`);
  const [pkg, short] = name.split('.') as [string, string];
  const fields = new Map<number, FieldSpec>();
  for (const entry of line.split(' ')) {
    const m = /^(\d+):(\w+):(!\[|[!*[^])?(.+)$/.exec(entry);
    if (!m) throw new Error(`protobuf-schema: ${name}: bad entry ${entry}`);
    const num = Number(m[1]);
    if (fields.has(num)) throw new Error(`protobuf-schema: ${name}: field ${num} twice`);
    fields.set(num, { num, json: m[2]!, shape: SHAPES[m[3]!] ?? 'value', type: parseType(m[4]!, `${name}.${m[2]}`) });
  }
  return { fullName: `${PACKAGES[pkg]}.${short}`, fields };
}

const parsed = new Map<string, MessageSpec>();

/** A message's table by its short name (`core.PodSpec`); throws for a name the table lacks (a bug, not input). */
export function messageSpec(name: string): MessageSpec {
  let s = parsed.get(name);
  if (!s) parsed.set(name, (s = parseMessage(name)));
  return s;
}

/** The message of a kind, or undefined for a kind without a table. DeleteOptions is every group version's. */
export function kindMessage(apiVersion: string, kind: string): string | undefined {
  if (kind === 'DeleteOptions') return 'meta.DeleteOptions';
  return KINDS[`${apiVersion}/${kind}`];
}

/** Every message name of the table (for tests). */
export function messageNames(): string[] {
  return Object.keys(TABLE);
}
