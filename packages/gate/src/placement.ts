/**
 * Where this service instance runs, read from the same OpenTelemetry resource attributes keyscope
 * reads (docs/design.md, "The evidence"), so the gate's store ids and scope checks name the nodes,
 * clusters and regions exactly as keyscope's findings will. '' when the resource does not say.
 */
export interface Placement {
  /** `service.name`. */
  readonly service: string;
  /** `service.instance.id`, else `host.name`. */
  readonly node: string;
  /** `k8s.cluster.name`. */
  readonly cluster: string;
  /** `cloud.region`. */
  readonly region: string;
}

/**
 * Takes `resource.attributes` of the service's tracer provider (any object of attribute values),
 * so the gate needs no dependency on the SDK's `Resource` type.
 */
export function placementFromResource(attributes: Readonly<Record<string, unknown>>): Placement {
  return Object.freeze({
    service: text(attributes['service.name']),
    node: text(attributes['service.instance.id']) || text(attributes['host.name']),
    cluster: text(attributes['k8s.cluster.name']),
    region: text(attributes['cloud.region']),
  });
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
