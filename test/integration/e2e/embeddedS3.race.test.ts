import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import type { EmbeddedS3Handle } from '../../../shared/embedded/s3.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { startScratchS3 } from '../../helpers/scratchS3.ts';

let s3: EmbeddedS3Handle;
let store: ObjectStore;

beforeAll(async () => {
  s3 = await startScratchS3('s3-race', 'race');
  store = new ObjectStore({
    endpoint: s3.endpoint,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    bucket: 'race',
    region: 'us-east-1',
  });
});
afterAll(async () => {
  await s3.stop();
});

describe('embedded S3', () => {
  it('stores an object while the last other object of its folder is being deleted', async () => {
    // Deleting a folder's last object used to remove the folder, under an upload opening its file
    // there: the write stream's ENOENT was thrown in the server's process (the whole platform).
    for (let round = 0; round < 60; round++) {
      await store.put(`inputs/audio/old-${round}`, Buffer.from('old'));
      const body = Buffer.from(`new object ${round}`);
      await Promise.all([
        store.remove(`inputs/audio/old-${round}`),
        store.put(`inputs/audio/new-${round}`, body),
      ]);
      expect((await store.getBuffer(`inputs/audio/new-${round}`)).toString()).toBe(`new object ${round}`);
      await store.remove(`inputs/audio/new-${round}`);
    }
    expect(await store.stat('inputs/audio/new-0')).toBeUndefined();
  });
});
