/**
 * Ids of the rows written at the event rate (events and their deliveries): UUIDv7, ordered by the
 * time they were made. Their primary keys, and the indexes keyed by them (a delivery's event, an
 * attempt's delivery), then grow at their right edge as the stream's cursor does. Random UUIDs put
 * each insert on a random leaf of an index as large as its table: at 20 million deliveries a
 * publish dirtied 3.3 pages and wrote 14.5 KB of WAL per event (1.6 KB on an empty database, the
 * rest whole pages after a checkpoint), and a claim read 4.5 pages per delivery from outside
 * shared_buffers (`npm run bench:scale -- --statements`). Postgres's uuidv7() is the same for rows
 * given no id (migration 0034).
 */
import { v7 } from 'uuid';

export const newRowId = (): string => v7();
