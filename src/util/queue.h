/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A singly linked FIFO kept as a head/tail pointer pair, linked through a
 * named pointer field of the element.  The element type is not fixed, so
 * one element can sit on several queues through different fields, or on
 * one of several queues through the same field (an op's op_q_next).
 * Every argument is an lvalue and may be evaluated more than once.
 */
#ifndef RAILYARD_UTIL_QUEUE_H
#define RAILYARD_UTIL_QUEUE_H

#include <stddef.h>

#define ry__sq_init(head, tail) ((head) = (tail) = NULL)

#define ry__sq_push_tail(head, tail, elem, next)                               \
	do {                                                                   \
		(elem)->next = NULL;                                           \
		if (tail)                                                      \
			(tail)->next = (elem);                                 \
		else                                                           \
			(head) = (elem);                                       \
		(tail) = (elem);                                               \
	} while (0)

/* Jump the queue: for what must go before everything already waiting. */
#define ry__sq_push_head(head, tail, elem, next)                               \
	do {                                                                   \
		(elem)->next = (head);                                         \
		(head) = (elem);                                               \
		if (!(tail))                                                   \
			(tail) = (elem);                                       \
	} while (0)

/* Append the queue [shead .. stail] (not empty) to this one. */
#define ry__sq_append(head, tail, shead, stail, next)                          \
	do {                                                                   \
		if (tail)                                                      \
			(tail)->next = (shead);                                \
		else                                                           \
			(head) = (shead);                                      \
		(tail) = (stail);                                              \
	} while (0)

/* Unlink the first element (read it from head first); queue not empty. */
#define ry__sq_pop_head(head, tail, next)                                      \
	do {                                                                   \
		(head) = (head)->next;                                         \
		if (!(head))                                                   \
			(tail) = NULL;                                         \
	} while (0)

#endif
