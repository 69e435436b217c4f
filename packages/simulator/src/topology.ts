import type { InstrumentationScope, Resource } from '@keyscope/otlp';
import type { Prng } from './prng.ts';
import type { DownstreamSpec, MutationServiceSpec, Scenario, ServiceSpec } from './scenario.ts';

/** One service instance. Its `resource` object is shared by every span it emits. */
export interface SimNode {
  service: string;
  /** Position in the service's node list (what `FailureSpec.node` indexes). */
  index: number;
  /** `service.instance.id`: what keyscope calls the node. */
  instanceId: string;
  podName: string;
  ip: string;
  /** The address of the database its reads go to (one per cluster). */
  databaseIp: string;
  region: string;
  cluster: string;
  zone: string;
  resource: Resource;
}

export interface SimService {
  name: string;
  role: 'caller' | 'mutation' | 'downstream';
  /** Undefined for the caller, which has no dedup store and is never load balanced to. */
  spec: ServiceSpec | undefined;
  nodes: SimNode[];
  /** Nodes by `clusterKey(region, cluster)`. */
  clusterNodes: Map<string, SimNode[]>;
  /** The application's own instrumentation scope (where `idempotency.check` spans come from). */
  appScope: InstrumentationScope;
  /** The service it calls with the same key while executing, if any. */
  downstream: DownstreamService | undefined;
}

export interface FrontService extends SimService {
  spec: MutationServiceSpec;
}

export interface DownstreamService extends SimService {
  spec: DownstreamSpec;
}

export interface Topology {
  caller: SimService;
  front: FrontService[];
  /** Every service by name, caller and downstreams included. */
  services: Map<string, SimService>;
  /** Region names in scenario order: the order regional failover walks. */
  regions: string[];
  /** Cluster names per region, in scenario order. */
  clustersByRegion: Map<string, string[]>;
  /** Services that serve reads to the caller: every one but the caller. */
  readTargets: SimService[];
}

export function clusterKey(region: string, cluster: string): string {
  return `${region}/${cluster}`;
}

const POD_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** Builds nodes and their resources. Draws only from `rng`, so traffic changes never rename nodes. */
export function buildTopology(scenario: Scenario, rng: Prng): Topology {
  const services = new Map<string, SimService>();
  const build = (
    name: string,
    role: SimService['role'],
    spec: ServiceSpec | undefined,
    nodesPerCluster: number,
    downstream: DownstreamService | undefined,
  ): SimService => {
    const serviceIndex = services.size;
    const version = `1.${rng.int(0, 9)}.${rng.int(0, 20)}`;
    const service: SimService = {
      name,
      role,
      spec,
      nodes: [],
      clusterNodes: new Map(),
      appScope: { name, version },
      downstream,
    };
    scenario.regions.forEach((region, regionIndex) => {
      region.clusters.forEach((cluster, clusterIndex) => {
        const replicaSet = podToken(rng, 10);
        const inCluster: SimNode[] = [];
        const subnet = `10.${regionIndex * 16 + clusterIndex}`;
        for (let i = 0; i < nodesPerCluster; i++) {
          const podName = `${name}-${replicaSet}-${podToken(rng, 5)}`;
          const node: SimNode = {
            service: name,
            index: service.nodes.length,
            instanceId: `shop.${podName}.${name}`,
            podName,
            ip: `${subnet}.${serviceIndex}.${10 + i}`,
            databaseIp: `${subnet}.250.${serviceIndex}`,
            region: region.name,
            cluster,
            zone: region.zones[i % region.zones.length]!,
            resource: { attributes: {} },
          };
          node.resource.attributes = nodeResourceAttributes(node, version, rng);
          service.nodes.push(node);
          inCluster.push(node);
        }
        service.clusterNodes.set(clusterKey(region.name, cluster), inCluster);
      });
    });
    services.set(name, service);
    return service;
  };

  const caller = build(scenario.caller.name, 'caller', undefined, scenario.caller.nodesPerCluster, undefined);
  const front = scenario.services.map((spec) => {
    const downstream = spec.downstream
      ? (build(
          spec.downstream.name,
          'downstream',
          spec.downstream,
          spec.downstream.nodesPerCluster,
          undefined,
        ) as DownstreamService)
      : undefined;
    // The spec passed in is the mutation spec, so the narrower type holds.
    return build(spec.name, 'mutation', spec, spec.nodesPerCluster, downstream) as FrontService;
  });
  return {
    caller,
    front,
    services,
    regions: scenario.regions.map((r) => r.name),
    clustersByRegion: new Map(scenario.regions.map((r) => [r.name, [...r.clusters]])),
    readTargets: [...services.values()].filter((s) => s.spec !== undefined),
  };
}

function podToken(rng: Prng, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += POD_ALPHABET[rng.int(0, POD_ALPHABET.length)];
  return out;
}

function nodeResourceAttributes(node: SimNode, serviceVersion: string, rng: Prng): Resource['attributes'] {
  return {
    'service.name': node.service,
    'service.version': serviceVersion,
    'service.instance.id': node.instanceId,
    'host.name': node.podName,
    'host.arch': 'amd64',
    'os.type': 'linux',
    'process.pid': rng.int(1, 64),
    'process.runtime.name': 'nodejs',
    'process.runtime.version': '20.19.2',
    'telemetry.sdk.name': 'opentelemetry',
    'telemetry.sdk.language': 'nodejs',
    'telemetry.sdk.version': '2.0.1',
    'deployment.environment.name': 'production',
    'cloud.provider': 'aws',
    'cloud.region': node.region,
    'cloud.availability_zone': node.zone,
    'k8s.cluster.name': node.cluster,
    'k8s.namespace.name': 'shop',
    'k8s.pod.name': node.podName,
  };
}
