import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';
import { findInWorkspace, type NewWorkspaceRecord, workspaceRecord } from './workspaceRows.ts';

export const videoStatus = z.enum(['generating', 'ready', 'failed']);
export type VideoStatus = z.infer<typeof videoStatus>;
export const aspectRatio = z.enum(['16:9', '9:16']);
export type AspectRatio = z.infer<typeof aspectRatio>;
export const resolution = z.enum(['720p', '1080p']);
export type Resolution = z.infer<typeof resolution>;

const videoRow = workspaceRecord.extend({
  task_id: z.string(),
  project_id: z.string().nullable(),
  job_id: z.string().nullable(),
  file_id: z.string().nullable(),
  title: z.string(),
  status: videoStatus,
  error: z.string().nullable(),
  aspect_ratio: aspectRatio,
  resolution,
  requested_duration_seconds: z.number(),
  duration_seconds: z.number().nullable(),
  livemode: z.boolean(),
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
});
export type VideoRow = z.infer<typeof videoRow>;

const columns = sql.fragment`
  id, workspace_id, task_id, project_id, job_id, file_id, title, status, error, aspect_ratio, resolution,
  requested_duration_seconds, duration_seconds, livemode, created_at, updated_at
`;

export type NewVideo = NewWorkspaceRecord & {
  taskId: string;
  projectId: string;
  jobId: string | null;
  title: string;
  prompt: string;
  negativePrompt: string | null;
  aspectRatio: AspectRatio;
  resolution: Resolution;
  requestedDurationSeconds: number;
  livemode: boolean;
};

/** A video in generating (the render's job to wait on is `jobId`). */
export function insertVideo(db: Db, v: NewVideo): Promise<VideoRow> {
  return db.one(sql.type(videoRow)`
    insert into videos (id, workspace_id, task_id, project_id, job_id, title, prompt, negative_prompt,
                        aspect_ratio, resolution, requested_duration_seconds, livemode)
    values (${v.id}, ${v.workspaceId}, ${v.taskId}, ${v.projectId}, ${v.jobId}, ${v.title}, ${v.prompt},
            ${v.negativePrompt}, ${v.aspectRatio}, ${v.resolution}, ${v.requestedDurationSeconds}, ${v.livemode})
    returning ${columns}
  `);
}

export function findWorkspaceVideo(db: Db, workspaceId: string, videoId: string): Promise<VideoRow | null> {
  return findInWorkspace(db, { name: 'videos', row: videoRow, columns }, workspaceId, videoId);
}

/** The video for its render job; null when it was deleted meanwhile (with its task). */
export function findVideo(db: Db, videoId: string): Promise<VideoRow | null> {
  return db.maybeOne(sql.type(videoRow)`select ${columns} from videos where id = ${videoId}`);
}

const downloadRow = videoRow.extend({
  storage_key: z.string().nullable(),
  size_bytes: z.number().nullable(),
  mime_type: z.string().nullable(),
  file_created_at: isoTimestamp.nullable(),
});
export type VideoDownloadRow = z.infer<typeof downloadRow>;

/** The video with its file's storage facts (null while it has no file), for GET /videos/{id}/file. */
export function findWorkspaceVideoDownload(
  db: Db,
  workspaceId: string,
  videoId: string,
): Promise<VideoDownloadRow | null> {
  return db.maybeOne(sql.type(downloadRow)`
    select v.id, v.workspace_id, v.task_id, v.project_id, v.job_id, v.file_id, v.title, v.status, v.error,
           v.aspect_ratio, v.resolution, v.requested_duration_seconds, v.duration_seconds, v.livemode,
           v.created_at, v.updated_at,
           f.storage_key, f.size_bytes, f.mime_type, f.created_at as file_created_at
    from videos v
    left join files f on f.workspace_id = v.workspace_id and f.id = v.file_id
    where v.id = ${videoId} and v.workspace_id = ${workspaceId}
  `);
}

/** The video, locked until the caller's transaction ends (its render is being recorded). */
export function lockVideo(db: Db, videoId: string): Promise<VideoRow | null> {
  return db.maybeOne(sql.type(videoRow)`select ${columns} from videos where id = ${videoId} for update`);
}

/** generating → ready with its file; null when the video is gone or no longer generating. */
export function markVideoReady(
  db: Db,
  ready: { videoId: string; fileId: string; durationSeconds: number },
): Promise<VideoRow | null> {
  return db.maybeOne(sql.type(videoRow)`
    update videos
    set status = 'ready', file_id = ${ready.fileId}, duration_seconds = ${ready.durationSeconds},
        error = null, updated_at = now()
    where id = ${ready.videoId} and status = 'generating'
    returning ${columns}
  `);
}

/** generating → failed with a short public message; a video that already ended is left alone. */
export async function markVideoFailed(db: Db, videoId: string, error: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update videos set status = 'failed', error = ${error}, updated_at = now()
    where id = ${videoId} and status = 'generating'
  `);
}
