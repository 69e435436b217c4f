import type { Mapping } from '@keyscope/attempts';
import { type DetectorConfig, defaultDetectorConfig } from '@keyscope/detector';
import type { ServeConfig } from '../config.ts';

/**
 * The detector's settings as every door runs it — serve, `keyscope analyze`, the Kafka detect and
 * serve roles: the detector's defaults, the settings file's `detector` section over them, and the
 * key namespace and declared scopes of the attribute mapping. One function, so that an archive
 * analysed with serve's settings file is judged as serve judges it.
 */
export function detectorConfigOf(detector: ServeConfig['detector'], mapping: Mapping): DetectorConfig {
  return Object.freeze({
    ...defaultDetectorConfig(),
    ...detector,
    keyNamespace: mapping.keyNamespace,
    declaredScopes: mapping.scopes,
  });
}
