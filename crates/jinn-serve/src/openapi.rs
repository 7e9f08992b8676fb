//! `GET /v1/openapi.json`: a small OpenAPI 3.0 description of the API.

use axum::Json;
use serde_json::{json, Value};

/// The OpenAPI document.
pub fn document() -> Value {
    let error = json!({ "description": "error", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let frame = json!({ "description": "a frame", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/FrameReply" } } } });
    let id = json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } });
    json!({
        "openapi": "3.0.3",
        "info": { "title": "jinn world-model API", "version": "1", "description": "Play a learned world model frame by frame." },
        "paths": {
            "/v1/health": { "get": { "summary": "Liveness, model name, open sessions", "responses": { "200": { "description": "ok" } } } },
            "/v1/models": { "get": { "summary": "The loaded model: frame shape, actions, start splits", "responses": { "200": { "description": "models" } } } },
            "/v1/world/sessions": { "post": {
                "summary": "Start a session: {} (a frame of the model's data), {\"dataset\": {split, episode, frame}} or {\"frames\": [base64 PNG, ...]}",
                "requestBody": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/CreateRequest" } } } },
                "responses": { "201": frame, "400": error, "404": error, "413": error, "429": error }
            } },
            "/v1/world/sessions/{id}": {
                "get": { "summary": "Frame count and undo depth", "parameters": [id], "responses": { "200": { "description": "info" }, "404": error } },
                "delete": { "summary": "Close the session", "parameters": [id], "responses": { "204": { "description": "closed" }, "404": error } }
            },
            "/v1/world/sessions/{id}/step": { "post": {
                "summary": "Apply an action; returns the next frame and timings",
                "parameters": [id],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["action"], "properties": { "action": { "type": "integer", "minimum": 0 } } } } } },
                "responses": { "200": frame, "400": error, "404": error, "409": error }
            } },
            "/v1/world/sessions/{id}/undo": { "post": { "summary": "Undo the last step", "parameters": [id], "responses": { "200": frame, "404": error, "409": error } } },
            "/v1/world/sessions/{id}/frames/{i}": { "get": {
                "summary": "Frame i as a PNG",
                "parameters": [id, { "name": "i", "in": "path", "required": true, "schema": { "type": "integer", "minimum": 0 } }],
                "responses": { "200": { "description": "PNG", "content": { "image/png": {} } }, "400": error, "404": error }
            } },
            "/v1/world/sessions/{id}/gif": { "get": { "summary": "The session as an animated GIF", "parameters": [id], "responses": { "200": { "description": "GIF", "content": { "image/gif": {} } }, "404": error } } },
            "/v1/lm/generate": { "post": {
                "summary": "Generate text from a prompt; server-sent events `token` {text} ... `done` {prompt_tokens, tokens, queue_ms, model_ms, tokens_per_s} (or one JSON reply with \"stream\": false)",
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["prompt"], "properties": {
                    "prompt": { "type": "string", "minLength": 1 },
                    "max_tokens": { "type": "integer", "minimum": 1, "default": 200 },
                    "temperature": { "type": "number", "minimum": 0, "default": 0.8 },
                    "top_k": { "type": "integer", "minimum": 0, "default": 40, "description": "0: all tokens" },
                    "seed": { "type": "integer", "minimum": 0, "default": 0 },
                    "stream": { "type": "boolean", "default": true }
                } } } } },
                "responses": { "200": { "description": "text/event-stream, or JSON {text, ...} without streaming" }, "400": error, "404": error, "413": error }
            } },
            "/v1/openapi.json": { "get": { "summary": "This document", "responses": { "200": { "description": "OpenAPI 3.0" } } } }
        },
        "components": { "schemas": {
            "Error": { "type": "object", "required": ["error"], "properties": { "error": { "type": "string" } } },
            "CreateRequest": { "type": "object", "properties": {
                "model": { "type": "string" },
                "dataset": { "type": "object", "required": ["split"], "properties": { "split": { "type": "string" }, "episode": { "type": "integer" }, "frame": { "type": "integer" } } },
                "frames": { "type": "array", "items": { "type": "string", "description": "base64 PNG of the model's frame size" } }
            } },
            "FrameReply": { "type": "object", "properties": {
                "id": { "type": "string" }, "index": { "type": "integer" }, "frame": { "type": "string", "description": "base64 PNG" },
                "undo_steps": { "type": "integer" },
                "timings": { "type": "object", "properties": { "queue_ms": { "type": "number" }, "model_ms": { "type": "number" }, "encode_ms": { "type": "number" }, "server_ms": { "type": "number" } } }
            } }
        } }
    })
}

/// `GET /v1/openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(document())
}
