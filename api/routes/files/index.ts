import type { AppDeps } from '../../deps.ts';
import type { HandlerTable } from '../handlerTable.ts';
import { completeUpload } from './completeUpload.ts';
import { createUpload } from './createUpload.ts';
import { downloadFile } from './downloadFile.ts';
import { getFile } from './getFile.ts';
import { uploadFile } from './uploadFile.ts';

/** The files operations: direct and presigned uploads, records and bytes. */
export function fileHandlers(deps: AppDeps): HandlerTable {
  return {
    'files.upload': uploadFile(deps),
    'files.createUpload': createUpload(deps),
    'files.completeUpload': completeUpload(deps),
    'files.read': getFile(deps),
    'files.download': downloadFile(deps),
  };
}
