export { WebhookPlatform, DEFAULT_BASE_URL, SDK_VERSION, parseRetryAfter } from './client.js';
export type {
  AddRecipientsResult,
  Attempt,
  SignedRequest,
  BodyOf,
  Broadcast,
  BroadcastRecipient,
  ChannelAccount,
  ConsentRecord,
  Contact,
  Conversation,
  Message,
  OutboundMessage,
  SetupLink,
  Stage,
  Template,
  ClientOptions,
  CreateEndpoint,
  Delivery,
  DeliveryDetail,
  DeliveryFilter,
  Endpoint,
  EndpointWithSecret,
  ErrorEnvelope,
  EventType,
  Page,
  Paging,
  PublishEvent,
  QueryOf,
  RecoverDeliveries,
  RecoveryResult,
  ResponseOf,
  StreamItem,
  StreamPaging,
  TestResult,
  UpdateEndpoint,
} from './client.js';
export { WebhookPlatformError } from './errors.js';
export { EventStream, type StreamOptions } from './stream.js';
export { ROUTES, type Method, type Route, type RouteName, type Shape } from './routes.js';
export { signatureFor, standardKeyFor, standardSignatureFor, verifyStandardWebhook, verifyWebhook, type HeaderBag } from './verify.js';
export type { components, paths } from './openapi.js';
