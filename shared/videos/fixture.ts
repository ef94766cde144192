import { readFile } from 'node:fs/promises';

import type { AspectRatio, Resolution } from '../db/queries/videos.ts';

/**
 * The clips test keys get (spec: a ready fixture, nothing rendered): one-second H.264 MP4s of the
 * right frame size saying "Test mode video", shipped next to this file (a few KB each) so neither
 * the api nor a test-key job ever runs ffmpeg.
 */
export const fixtureVideoSeconds = 1;

const cache = new Map<string, Promise<Buffer>>();

export function fixtureVideo(aspectRatio: AspectRatio, resolution: Resolution): Promise<Buffer> {
  const name = `${aspectRatio.replace(':', 'x')}-${resolution}.mp4`;
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = readFile(new URL(`./fixtures/${name}`, import.meta.url));
    cache.set(name, bytes);
  }
  return bytes;
}
