import { execFile } from 'node:child_process';
import { accessSync, chmodSync, constants } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import ffprobe from '@ffprobe-installer/ffprobe';

const run = promisify(execFile);

/**
 * The ffprobe binary from npm, made executable: its package ships it 0744 and makes it executable in
 * a postinstall script, which npm 11 does not run unless allowScripts approves it (RECIPES.md).
 */
function ffprobePath(): string {
  try {
    accessSync(ffprobe.path, constants.X_OK);
  } catch {
    chmodSync(ffprobe.path, 0o755);
  }
  return ffprobe.path;
}

export type ProbedVideo = {
  codec: string;
  width: number;
  height: number;
  pixelFormat: string;
  duration: number;
};

/** What ffprobe reads from MP4 bytes: the first video stream and the container's duration. */
export async function probeVideo(bytes: Buffer): Promise<ProbedVideo> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-probe-'));
  try {
    const file = path.join(dir, 'clip.mp4');
    await writeFile(file, bytes);
    const { stdout } = await run(ffprobePath(), [
      '-v',
      'error',
      '-select_streams',
      'v:0',
      '-show_entries',
      'stream=codec_name,width,height,pix_fmt:format=duration',
      '-of',
      'json',
      file,
    ]);
    const out = JSON.parse(stdout) as {
      streams: { codec_name: string; width: number; height: number; pix_fmt: string }[];
      format: { duration: string };
    };
    const stream = out.streams[0]!;
    return {
      codec: stream.codec_name,
      width: stream.width,
      height: stream.height,
      pixelFormat: stream.pix_fmt,
      duration: Number(out.format.duration),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
