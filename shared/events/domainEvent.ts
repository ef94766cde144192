/** Event kinds the service emits (spec "Webhooks"). */
export type EventType = 'task.message.created' | 'video.ready' | 'job.succeeded' | 'job.failed';

export type DomainEvent = {
  workspaceId: string;
  projectId: string | null;
  type: EventType;
  data: Record<string, unknown>;
};
