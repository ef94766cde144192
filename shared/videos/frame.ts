import type { AspectRatio, Resolution } from '../db/queries/videos.ts';

/** Pixel size of a clip: the resolution names the short side (720p → 1280×720, or 720×1280 upright). */
export function frameSize(
  aspectRatio: AspectRatio,
  resolution: Resolution,
): { width: number; height: number } {
  const short = resolution === '720p' ? 720 : 1080;
  const long = (short * 16) / 9;
  return aspectRatio === '16:9' ? { width: long, height: short } : { width: short, height: long };
}
