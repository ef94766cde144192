import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { type EmbeddedS3Handle, startEmbeddedS3 } from '../../shared/embedded/s3.ts';

/** An embedded S3 server of the test file's own, storing in a fresh temporary folder that stop() removes. */
export async function startScratchS3(name: string, bucket: string): Promise<EmbeddedS3Handle> {
  const directory = await mkdtemp(path.join(tmpdir(), `svc-${name}-`));
  const s3 = await startEmbeddedS3(directory, bucket);
  return {
    endpoint: s3.endpoint,
    stop: async () => {
      await s3.stop();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
