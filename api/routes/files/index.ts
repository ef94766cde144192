import type { AppDeps } from '../../deps.ts';
import type { HandlerTable } from '../index.ts';
import { getFile } from './getFile.ts';
import { uploadFile } from './uploadFile.ts';

/** The files operations: direct and presigned uploads, records and bytes. */
export function fileHandlers(deps: AppDeps): HandlerTable {
  return {
    'files.upload': uploadFile(deps),
    'files.read': getFile(deps),
  };
}
