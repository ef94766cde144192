import type { AppDeps } from '../../deps.ts';
import type { HandlerTable } from '../handlerTable.ts';
import { downloadVideo } from './downloadVideo.ts';
import { getVideo } from './getVideo.ts';
import { postVideos } from './postVideos.ts';

/** The video operations (openapi.yaml operationId → handler). */
export function videoHandlers(deps: AppDeps): HandlerTable {
  return {
    'videos.create': postVideos(deps),
    'videos.read': getVideo(deps),
    'videos.download': downloadVideo(deps),
  };
}
