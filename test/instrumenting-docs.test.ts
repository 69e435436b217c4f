import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * docs/instrumenting.md's Collector configuration, read as the Collector would read its file:
 * valid YAML, every component a pipeline names defined, and the two pipelines it promises.
 */
const docs = readFileSync(new URL('../docs/instrumenting.md', import.meta.url), 'utf8');
const blocks = [...docs.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);

interface Pipeline {
  receivers: string[];
  processors?: string[];
  exporters: string[];
}

interface CollectorConfig {
  receivers: Record<string, unknown>;
  processors: Record<string, Record<string, unknown>>;
  exporters: Record<string, Record<string, unknown>>;
  service: { pipelines: Record<string, Pipeline> };
}

const config = parse(blocks[0] ?? '') as CollectorConfig;

describe('docs/instrumenting.md, the Collector side', () => {
  it('holds one Collector configuration, valid YAML, whose pipelines name only defined components', () => {
    expect(blocks).toHaveLength(1);
    for (const [name, pipeline] of Object.entries(config.service.pipelines)) {
      for (const receiver of pipeline.receivers) expect(config.receivers, name).toHaveProperty([receiver]);
      for (const processor of pipeline.processors ?? [])
        expect(config.processors, name).toHaveProperty([processor]);
      for (const exporter of pipeline.exporters) expect(config.exporters, name).toHaveProperty([exporter]);
    }
  });

  it('sends keyed spans to keyscope through a filter and no sampler, and tail-samples only the backend', () => {
    const pipelines = Object.values(config.service.pipelines);
    const toKeyscope = pipelines.filter((pipeline) => pipeline.exporters.includes('otlphttp/keyscope'));
    expect(toKeyscope).toHaveLength(1);
    const keyscope = toKeyscope[0]!;
    const kinds = (keyscope.processors ?? []).map((processor) => processor.split('/')[0]);
    expect(kinds).toContain('filter');
    expect(kinds.filter((kind) => /sampl/.test(kind!))).toEqual([]);
    const filter = config.processors[(keyscope.processors ?? []).find((p) => p.startsWith('filter'))!]!;
    const conditions = (filter.traces as { span: string[] }).span.join(' ');
    expect(conditions).toContain('attributes["idempotency.key"] == nil');
    expect(conditions).toContain('attributes["http.request.header.idempotency-key"] == nil');
    expect(config.exporters['otlphttp/keyscope']).toMatchObject({
      endpoint: expect.stringMatching(/:4318$/),
    });

    const backend = pipelines.filter((pipeline) => pipeline !== keyscope);
    expect(backend).toHaveLength(1);
    expect(backend[0]!.processors).toContain('tail_sampling');
    expect(backend[0]!.exporters).not.toContain('otlphttp/keyscope');
    expect(backend[0]!.receivers).toEqual(keyscope.receivers);
  });
});
