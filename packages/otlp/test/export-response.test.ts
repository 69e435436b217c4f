import { describe, expect, it } from 'vitest';
import { encodeExportResponse, exportResponseJson } from '../src/export-response.ts';
import { official } from './support/reference-decoder.ts';

describe('encodeExportResponse', () => {
  it('is the empty message when every span was accepted', () => {
    expect(encodeExportResponse({ rejectedSpans: 0, errorMessage: '' })).toEqual(new Uint8Array(0));
    expect(exportResponseJson({ rejectedSpans: 0, errorMessage: '' })).toEqual({});
  });

  it('reports rejected spans as partial_success, as the official protos read it', () => {
    const bytes = encodeExportResponse({
      rejectedSpans: 3,
      errorMessage: 'spans without an idempotency key: 3 ✓',
    });
    const decoded = official.ExportTraceServiceResponse.toObject(
      official.ExportTraceServiceResponse.decode(bytes),
      {
        longs: String,
      },
    );
    expect(decoded).toEqual({
      partialSuccess: { rejectedSpans: '3', errorMessage: 'spans without an idempotency key: 3 ✓' },
    });
  });

  it('writes the JSON form with the int64 as a decimal string', () => {
    expect(exportResponseJson({ rejectedSpans: 2, errorMessage: 'late' })).toEqual({
      partialSuccess: { rejectedSpans: '2', errorMessage: 'late' },
    });
  });
});

describe('encodeExportResponse for logs', () => {
  it('reports rejected log records as the official ExportLogsServiceResponse reads it', () => {
    const bytes = encodeExportResponse({ rejectedSpans: 2, errorMessage: 'too old' }, 'logs');
    const decoded = official.ExportLogsServiceResponse.toObject(
      official.ExportLogsServiceResponse.decode(bytes),
      { longs: String },
    );
    expect(decoded).toEqual({ partialSuccess: { rejectedLogRecords: '2', errorMessage: 'too old' } });
  });

  it('names rejectedLogRecords in the JSON form, and is {} when everything was accepted', () => {
    expect(exportResponseJson({ rejectedSpans: 1, errorMessage: 'late' }, 'logs')).toEqual({
      partialSuccess: { rejectedLogRecords: '1', errorMessage: 'late' },
    });
    expect(exportResponseJson({ rejectedSpans: 0, errorMessage: '' }, 'logs')).toEqual({});
  });
});
