"""The symbol-aware chunker: one realistic fixture per language, splitting, docs/config, fallback,
robustness, and a coverage property over every fixture."""

from __future__ import annotations

import itertools
import re

import pytest
from lgrep_core.domain.models import Chunk, ChunkKind, ContentType
from lgrep_index.chunker import CHUNKER_VERSION, MAX_LINE_CHARS, SPLIT_MARKER, chunk_file

# ---------------------------------------------------------------------------------------------
# fixtures: one small, realistic file per language (a class with methods + a free function)

PYTHON = '''\
"""Geometry helpers."""
import math
from dataclasses import dataclass

SCALE = 2


@dataclass
class Circle(Shape):
    """A round shape."""

    radius: float = 1.0

    def area(self) -> float:
        """Area of the circle."""
        return math.pi * self.radius**2

    def scaled(self, factor: float) -> "Circle":
        return Circle(self.radius * factor * SCALE)


def make_circle(radius: float) -> Circle:
    return Circle(radius)


if __name__ == "__main__":
    print(make_circle(2).area())
'''

TYPESCRIPT = """\
import { Injectable } from "@angular/core";
export * from "./shapes";

export interface Shape {
  area(): number;
}

@Injectable()
export class Circle implements Shape {
  private r: number;
  constructor(r: number) {
    this.r = r;
  }
  area(): number {
    return Math.PI * this.r ** 2;
  }
}

export function makeCircle(r: number): Circle {
  return new Circle(r);
}

export const square = (x: number): number => x * x;

namespace Geo {
  export function dist(a: number, b: number) {
    return a - b;
  }
}
"""

TSX = """\
import React, { useState } from "react";

type Props = { label: string };

export function Counter({ label }: Props) {
  const [count, setCount] = useState(0);
  return <button onClick={() => setCount(count + 1)}>{label} {count}</button>;
}

export class Panel extends React.Component<Props> {
  title(): string {
    return this.props.label.toUpperCase();
  }
  render() {
    return <div className="panel">{this.title()}</div>;
  }
}
"""

JAVASCRIPT = """\
'use strict';
const path = require('path');
import { readFile } from 'fs/promises';

export default function loadConfig(name) {
  const file = path.join(process.cwd(), name);
  return readFile(file, 'utf8');
}

export const parse = (text) => {
  return JSON.parse(text);
};

class Store extends Base {
  static create() {
    return new Store();
  }
  handle = (event) => {
    console.log('handling', event.type, event.target);
  };
}

module.exports.helper = function helper(x) {
  return x;
};
"""

GO = """\
// Package shapes does geometry.
package shapes

import (
\t"fmt"
\t"math"
)

// Circle is round.
type Circle struct {
\tR float64
}

// Area returns the area.
func (c *Circle) Area() float64 {
\treturn math.Pi * c.R * c.R
}

func New(r float64) *Circle {
\tfmt.Println("new circle")
\treturn &Circle{R: r}
}
"""

RUST = """\
//! Points.
use std::fmt;

/// A point.
#[derive(Debug)]
pub struct Point {
    x: i32,
    y: i32,
}

impl Point {
    pub fn new(x: i32, y: i32) -> Self {
        Point { x, y }
    }

    pub fn norm(&self) -> f64 {
        ((self.x * self.x + self.y * self.y) as f64).sqrt()
    }
}

pub fn add(a: i32, b: i32) -> i32 {
    a + b
}
"""

JAVA = """\
package com.example.shapes;

import java.util.List;

/** A circle. */
@Entity
public class Circle extends Shape {
    private final double r;

    public Circle(double r) {
        this.r = r;
    }

    @Override
    public double area() {
        return Math.PI * r * r;
    }
}
"""

C = """\
/* Geometry in C. */
#include <stdio.h>
#include "shapes.h"

struct point {
    int x;
    int y;
};

typedef struct {
    double r;
} circle_t;

/* Adds two numbers. */
int add(int a, int b) {
    return a + b;
}

static const char *name_of(struct point *p) {
    return "point";
}
"""

CPP = """\
#include <vector>

namespace geo {

class Circle : public Shape {
public:
    explicit Circle(double r) : r_(r) {}
    double area() const override {
        return 3.14159 * r_ * r_;
    }
private:
    double r_;
};

int add(int a, int b) {
    return a + b;
}

}  // namespace geo
"""

CSHARP = """\
using System;
using System.Collections.Generic;

namespace Shapes
{
    /// <summary>A circle.</summary>
    public class Circle : IShape
    {
        private double r;

        public Circle(double r)
        {
            this.r = r;
        }

        public double Area()
        {
            return Math.PI * r * r;
        }
    }
}
"""

RUBY = """\
# frozen_string_literal: true
require "json"

module Geo
  # A circle.
  class Circle < Shape
    attr_reader :radius

    def initialize(radius)
      @radius = radius
    end

    def area
      Math::PI * radius**2
    end
  end
end

def make_circle(radius)
  Geo::Circle.new(radius)
end
"""

PHP = """\
<?php
declare(strict_types=1);

namespace App\\Shapes;

use App\\Contracts\\Shape;

/**
 * A circle.
 */
final class Circle implements Shape
{
    private float $r;

    public function __construct(float $r)
    {
        $this->r = $r;
    }

    public function area(): float
    {
        return M_PI * $this->r ** 2;
    }
}

function make_circle(float $r): Circle
{
    return new Circle($r);
}
"""

KOTLIN = """\
package com.example.shapes

import kotlin.math.PI

/** A circle. */
data class Circle(val r: Double) : Shape {
    override fun area(): Double {
        return PI * r * r
    }

    fun scaled(factor: Double): Circle {
        return Circle(r * factor)
    }
}

fun makeCircle(r: Double): Circle = Circle(r)
"""

SWIFT = """\
import Foundation

/// A circle.
struct Circle: Shape {
    let r: Double

    init(r: Double) {
        self.r = r
    }

    func area() -> Double {
        return Double.pi * r * r
    }
}

func makeCircle(_ r: Double) -> Circle {
    return Circle(r: r)
}
"""

SCALA = """\
package com.example.shapes

import scala.math.Pi

/** A circle. */
case class Circle(r: Double) extends Shape {
  def area: Double = {
    Pi * r * r
  }

  def scaled(factor: Double): Circle = {
    Circle(r * factor)
  }
}

def makeCircle(r: Double): Circle =
  Circle(r)
"""

LUA = """\
-- Geometry module.
local json = require("json")
local M = {}

--- Adds numbers.
function M.add(a, b)
  return a + b
end

function M:scale(x)
  return self.factor * x
end

local function helper(x)
  return x * 2
end

return M
"""

BASH = """\
#!/usr/bin/env bash
# Deploy script.
set -euo pipefail

log() {
  echo "[$(date)] $*"
}

function deploy {
  log "deploying $1"
  rsync -a . "$1"
}

deploy "$@"
"""

ELIXIR = """\
defmodule Geo.Circle do
  @moduledoc \"\"\"
  Circles.
  \"\"\"
  alias Geo.Shape

  defstruct r: 1.0

  @doc "Area."
  def area(%__MODULE__{r: r}) do
    :math.pi() * r * r
  end

  defp scale(x, 0), do: x
  defp scale(x, n), do: scale(x * 2, n - 1)
end
"""

HASKELL = """\
-- | Shapes module.
module Shapes (Shape (..), area) where

import Data.List (sort)

-- | A shape.
data Shape = Circle Double | Square Double
  deriving (Show, Eq)

class Describable a where
  describe :: a -> String

-- | Area of a shape.
area :: Shape -> Double
area (Circle r) = pi * r * r
area (Square s) = s * s
"""

ZIG = """\
//! Shapes.
const std = @import("std");

/// A circle.
pub const Circle = struct {
    r: f64,

    pub fn area(self: Circle) f64 {
        return std.math.pi * self.r * self.r;
    }

    pub fn scaled(self: Circle, factor: f64) Circle {
        return Circle{ .r = self.r * factor };
    }
};

pub fn add(a: i32, b: i32) i32 {
    return a + b;
}

test "add works" {
    try std.testing.expect(add(1, 2) == 3);
}
"""

FIXTURES: dict[str, tuple[str, str]] = {
    "python": ("geo/shapes.py", PYTHON),
    "typescript": ("src/shapes.ts", TYPESCRIPT),
    "tsx": ("src/Counter.tsx", TSX),
    "javascript": ("lib/config.mjs", JAVASCRIPT),
    "go": ("shapes/circle.go", GO),
    "rust": ("src/point.rs", RUST),
    "java": ("src/main/java/Circle.java", JAVA),
    "c": ("src/geo.c", C),
    "cpp": ("src/geo.cpp", CPP),
    "csharp": ("Shapes/Circle.cs", CSHARP),
    "ruby": ("lib/geo/circle.rb", RUBY),
    "php": ("src/Circle.php", PHP),
    "kotlin": ("src/Circle.kt", KOTLIN),
    "swift": ("Sources/Circle.swift", SWIFT),
    "scala": ("src/Circle.scala", SCALA),
    "lua": ("geo.lua", LUA),
    "bash": ("bin/deploy.sh", BASH),
    "elixir": ("lib/geo/circle.ex", ELIXIR),
    "haskell": ("src/Shapes.hs", HASKELL),
    "zig": ("src/shapes.zig", ZIG),
}

Row = tuple[int, int, str, str, tuple[str, ...]]

# (start_line, end_line, KIND, symbol, scope) of every chunk at the default budget (512 tokens)
WHOLE: dict[str, list[Row]] = {
    "python": [
        (1, 5, "ANCHOR", "shapes", ("shapes",)),
        (8, 19, "CLASS", "Circle", ("Circle",)),
        (22, 27, "FUNCTION", "make_circle", ("make_circle",)),
    ],
    "typescript": [
        (1, 2, "ANCHOR", "shapes", ("shapes",)),
        (4, 6, "CLASS", "Shape", ("Shape",)),
        (8, 17, "CLASS", "Circle", ("Circle",)),
        (19, 21, "FUNCTION", "makeCircle", ("makeCircle",)),
        (23, 23, "FUNCTION", "square", ("square",)),
        (25, 29, "MODULE", "Geo", ("Geo",)),
    ],
    "tsx": [
        (1, 3, "ANCHOR", "Counter", ("Counter",)),
        (5, 8, "FUNCTION", "Counter", ("Counter",)),
        (10, 17, "CLASS", "Panel", ("Panel",)),
    ],
    "javascript": [
        (1, 3, "ANCHOR", "config", ("config",)),
        (5, 8, "FUNCTION", "loadConfig", ("loadConfig",)),
        (10, 12, "FUNCTION", "parse", ("parse",)),
        (14, 21, "CLASS", "Store", ("Store",)),
        (23, 25, "FUNCTION", "helper", ("helper",)),
    ],
    "go": [
        (1, 6, "ANCHOR", "circle", ("circle",)),
        (9, 12, "CLASS", "Circle", ("Circle",)),
        (14, 17, "METHOD", "Area", ("Circle", "Area")),
        (19, 22, "FUNCTION", "New", ("New",)),
    ],
    "rust": [
        (1, 2, "ANCHOR", "point", ("point",)),
        (4, 9, "CLASS", "Point", ("Point",)),
        (11, 19, "MODULE", "Point", ("Point",)),
        (21, 23, "FUNCTION", "add", ("add",)),
    ],
    "java": [
        (1, 3, "ANCHOR", "Circle", ("Circle",)),
        (5, 18, "CLASS", "Circle", ("Circle",)),
    ],
    "c": [
        (1, 3, "ANCHOR", "geo", ("geo",)),
        (5, 8, "CLASS", "point", ("point",)),
        (10, 12, "CLASS", "circle_t", ("circle_t",)),
        (14, 17, "FUNCTION", "add", ("add",)),
        (19, 21, "FUNCTION", "name_of", ("name_of",)),
    ],
    "cpp": [
        (1, 1, "ANCHOR", "geo", ("geo",)),
        (3, 13, "CLASS", "Circle", ("geo", "Circle")),
        (15, 19, "FUNCTION", "add", ("geo", "add")),
    ],
    "csharp": [
        (1, 2, "ANCHOR", "Circle", ("Circle",)),
        (4, 20, "CLASS", "Circle", ("Shapes", "Circle")),
    ],
    "ruby": [
        (1, 2, "ANCHOR", "circle", ("circle",)),
        (4, 16, "CLASS", "Circle", ("Geo", "Circle")),
        (19, 21, "FUNCTION", "make_circle", ("make_circle",)),
    ],
    "php": [
        (1, 6, "ANCHOR", "Circle", ("Circle",)),
        (8, 24, "CLASS", "Circle", ("Circle",)),
        (26, 29, "FUNCTION", "make_circle", ("make_circle",)),
    ],
    "kotlin": [
        (1, 3, "ANCHOR", "Circle", ("Circle",)),
        (5, 14, "CLASS", "Circle", ("Circle",)),
        (16, 16, "FUNCTION", "makeCircle", ("makeCircle",)),
    ],
    "swift": [
        (1, 1, "ANCHOR", "Circle", ("Circle",)),
        (3, 14, "CLASS", "Circle", ("Circle",)),
        (16, 18, "FUNCTION", "makeCircle", ("makeCircle",)),
    ],
    "scala": [
        (1, 3, "ANCHOR", "Circle", ("Circle",)),
        (5, 14, "CLASS", "Circle", ("Circle",)),
        (16, 17, "FUNCTION", "makeCircle", ("makeCircle",)),
    ],
    "lua": [
        (1, 3, "ANCHOR", "geo", ("geo",)),
        (5, 8, "FUNCTION", "add", ("M", "add")),
        (10, 12, "METHOD", "scale", ("M", "scale")),
        (14, 18, "FUNCTION", "helper", ("helper",)),
    ],
    "bash": [
        (1, 3, "ANCHOR", "deploy", ("deploy",)),
        (5, 7, "FUNCTION", "log", ("log",)),
        (9, 14, "FUNCTION", "deploy", ("deploy",)),
    ],
    "elixir": [
        (1, 16, "MODULE", "Circle", ("Geo", "Circle")),
    ],
    "haskell": [
        (1, 4, "ANCHOR", "Shapes", ("Shapes",)),
        (6, 8, "CLASS", "Shape", ("Shape",)),
        (10, 11, "CLASS", "Describable", ("Describable",)),
        (13, 16, "FUNCTION", "area", ("area",)),
    ],
    "zig": [
        (1, 2, "ANCHOR", "shapes", ("shapes",)),
        (4, 15, "CLASS", "Circle", ("Circle",)),
        (17, 19, "FUNCTION", "add", ("add",)),
        (21, 23, "FUNCTION", "add works", ("add works",)),
    ],
}

# The same files with a tiny budget (32 tokens), where classes split into header + members.
MEMBERS: dict[str, list[Row]] = {
    "python": [
        (1, 5, "ANCHOR", "shapes", ("shapes",)),
        (8, 12, "CLASS", "Circle", ("Circle",)),
        (14, 16, "METHOD", "area", ("Circle", "area")),
        (18, 19, "METHOD", "scaled", ("Circle", "scaled")),
        (22, 27, "FUNCTION", "make_circle", ("make_circle",)),
    ],
    "typescript": [
        (1, 2, "ANCHOR", "shapes", ("shapes",)),
        (4, 6, "CLASS", "Shape", ("Shape",)),
        (8, 10, "CLASS", "Circle", ("Circle",)),
        (11, 13, "METHOD", "constructor", ("Circle", "constructor")),
        (14, 16, "METHOD", "area", ("Circle", "area")),
        (19, 21, "FUNCTION", "makeCircle", ("makeCircle",)),
        (23, 23, "FUNCTION", "square", ("square",)),
        (25, 29, "MODULE", "Geo", ("Geo",)),
    ],
    "tsx": [
        (1, 3, "ANCHOR", "Counter", ("Counter",)),
        (5, 6, "FUNCTION", "Counter", ("Counter",)),
        (7, 8, "FUNCTION", "Counter", ("Counter",)),
        (10, 10, "CLASS", "Panel", ("Panel",)),
        (11, 13, "METHOD", "title", ("Panel", "title")),
        (14, 16, "METHOD", "render", ("Panel", "render")),
    ],
    "javascript": [
        (1, 3, "ANCHOR", "config", ("config",)),
        (5, 8, "FUNCTION", "loadConfig", ("loadConfig",)),
        (10, 12, "FUNCTION", "parse", ("parse",)),
        (14, 14, "CLASS", "Store", ("Store",)),
        (15, 17, "METHOD", "create", ("Store", "create")),
        (18, 20, "METHOD", "handle", ("Store", "handle")),
        (23, 25, "FUNCTION", "helper", ("helper",)),
    ],
    "go": [
        (1, 6, "ANCHOR", "circle", ("circle",)),
        (9, 12, "CLASS", "Circle", ("Circle",)),
        (14, 17, "METHOD", "Area", ("Circle", "Area")),
        (19, 22, "FUNCTION", "New", ("New",)),
    ],
    "rust": [
        (1, 2, "ANCHOR", "point", ("point",)),
        (4, 9, "CLASS", "Point", ("Point",)),
        (11, 11, "MODULE", "Point", ("Point",)),
        (12, 14, "METHOD", "new", ("Point", "new")),
        (16, 18, "METHOD", "norm", ("Point", "norm")),
        (21, 23, "FUNCTION", "add", ("add",)),
    ],
    "java": [
        (1, 3, "ANCHOR", "Circle", ("Circle",)),
        (5, 8, "CLASS", "Circle", ("Circle",)),
        (10, 12, "METHOD", "Circle", ("Circle", "Circle")),
        (14, 17, "METHOD", "area", ("Circle", "area")),
    ],
    "c": [
        (1, 3, "ANCHOR", "geo", ("geo",)),
        (5, 8, "CLASS", "point", ("point",)),
        (10, 12, "CLASS", "circle_t", ("circle_t",)),
        (14, 17, "FUNCTION", "add", ("add",)),
        (19, 21, "FUNCTION", "name_of", ("name_of",)),
    ],
    "cpp": [
        (1, 1, "ANCHOR", "geo", ("geo",)),
        (3, 6, "CLASS", "Circle", ("geo", "Circle")),
        (7, 7, "METHOD", "Circle", ("geo", "Circle", "Circle")),
        (8, 12, "METHOD", "area", ("geo", "Circle", "area")),
        (15, 19, "FUNCTION", "add", ("geo", "add")),
    ],
    "csharp": [
        (1, 2, "ANCHOR", "Circle", ("Circle",)),
        (4, 9, "CLASS", "Circle", ("Shapes", "Circle")),
        (11, 14, "METHOD", "Circle", ("Shapes", "Circle", "Circle")),
        (16, 19, "METHOD", "Area", ("Shapes", "Circle", "Area")),
    ],
    "ruby": [
        (1, 2, "ANCHOR", "circle", ("circle",)),
        (4, 7, "CLASS", "Circle", ("Geo", "Circle")),
        (9, 11, "METHOD", "initialize", ("Geo", "Circle", "initialize")),
        (13, 15, "METHOD", "area", ("Geo", "Circle", "area")),
        (19, 21, "FUNCTION", "make_circle", ("make_circle",)),
    ],
    "php": [
        (1, 6, "ANCHOR", "Circle", ("Circle",)),
        (8, 13, "CLASS", "Circle", ("Circle",)),
        (15, 18, "METHOD", "__construct", ("Circle", "__construct")),
        (20, 23, "METHOD", "area", ("Circle", "area")),
        (26, 29, "FUNCTION", "make_circle", ("make_circle",)),
    ],
    "kotlin": [
        (1, 3, "ANCHOR", "Circle", ("Circle",)),
        (5, 6, "CLASS", "Circle", ("Circle",)),
        (7, 9, "METHOD", "area", ("Circle", "area")),
        (11, 13, "METHOD", "scaled", ("Circle", "scaled")),
        (16, 16, "FUNCTION", "makeCircle", ("makeCircle",)),
    ],
    "swift": [
        (1, 1, "ANCHOR", "Circle", ("Circle",)),
        (3, 5, "CLASS", "Circle", ("Circle",)),
        (7, 9, "METHOD", "init", ("Circle", "init")),
        (11, 13, "METHOD", "area", ("Circle", "area")),
        (16, 18, "FUNCTION", "makeCircle", ("makeCircle",)),
    ],
    "scala": [
        (1, 3, "ANCHOR", "Circle", ("Circle",)),
        (5, 6, "CLASS", "Circle", ("Circle",)),
        (7, 9, "METHOD", "area", ("Circle", "area")),
        (11, 13, "METHOD", "scaled", ("Circle", "scaled")),
        (16, 17, "FUNCTION", "makeCircle", ("makeCircle",)),
    ],
    "lua": [
        (1, 3, "ANCHOR", "geo", ("geo",)),
        (5, 8, "FUNCTION", "add", ("M", "add")),
        (10, 12, "METHOD", "scale", ("M", "scale")),
        (14, 18, "FUNCTION", "helper", ("helper",)),
    ],
    "bash": [
        (1, 3, "ANCHOR", "deploy", ("deploy",)),
        (5, 7, "FUNCTION", "log", ("log",)),
        (9, 14, "FUNCTION", "deploy", ("deploy",)),
    ],
    "elixir": [
        (1, 7, "MODULE", "Circle", ("Geo", "Circle")),
        (9, 12, "FUNCTION", "area", ("Geo", "Circle", "area")),
        (14, 15, "FUNCTION", "scale", ("Geo", "Circle", "scale")),
    ],
    "haskell": [
        (1, 4, "ANCHOR", "Shapes", ("Shapes",)),
        (6, 8, "CLASS", "Shape", ("Shape",)),
        (10, 11, "CLASS", "Describable", ("Describable",)),
        (13, 16, "FUNCTION", "area", ("area",)),
    ],
    "zig": [
        (1, 2, "ANCHOR", "shapes", ("shapes",)),
        (4, 6, "CLASS", "Circle", ("Circle",)),
        (8, 10, "METHOD", "area", ("Circle", "area")),
        (12, 14, "METHOD", "scaled", ("Circle", "scaled")),
        (17, 19, "FUNCTION", "add", ("add",)),
        (21, 23, "FUNCTION", "add works", ("add works",)),
    ],
}

# symbol -> signature, for a few chunks per language
SIGNATURES: dict[str, dict[str, str]] = {
    "python": {"Circle": "class Circle(Shape)", "scaled": 'def scaled(self, factor: float) -> "Circle"'},
    "typescript": {
        "Circle": "export class Circle implements Shape",
        "constructor": "constructor(r: number)",
        "square": "export const square = (x: number): number =>",
    },
    "tsx": {"Panel": "export class Panel extends React.Component<Props>", "render": "render()"},
    "javascript": {"loadConfig": "export default function loadConfig(name)", "handle": "handle = (event) =>"},
    "go": {"Circle": "type Circle struct", "Area": "func (c *Circle) Area() float64"},
    "rust": {"norm": "pub fn norm(&self) -> f64", "add": "pub fn add(a: i32, b: i32) -> i32"},
    "java": {"area": "public double area()"},
    "c": {"point": "struct point", "name_of": "static const char *name_of(struct point *p)"},
    "cpp": {"Circle": "class Circle : public Shape", "area": "double area() const override"},
    "csharp": {"Area": "public double Area()"},
    "ruby": {"Circle": "class Circle < Shape", "initialize": "def initialize(radius)"},
    "php": {"__construct": "public function __construct(float $r)"},
    "kotlin": {"area": "override fun area(): Double", "makeCircle": "fun makeCircle(r: Double): Circle"},
    "swift": {"init": "init(r: Double)", "area": "func area() -> Double"},
    "scala": {"area": "def area: Double", "makeCircle": "def makeCircle(r: Double): Circle"},
    "lua": {"add": "function M.add(a, b)", "scale": "function M:scale(x)"},
    "bash": {"log": "log()"},
    "elixir": {"area": "def area(%__MODULE__{r: r})"},
    "haskell": {"area": "area :: Shape -> Double", "Shape": "data Shape = Circle Double | Square Double"},
    "zig": {"scaled": "fn scaled(self: Circle, factor: f64) Circle", "add works": 'test "add works"'},
}


def rows(chunks: list[Chunk]) -> list[Row]:
    return [(c.start_line, c.end_line, c.kind.name, c.symbol, c.scope) for c in chunks]


def chunks_of(language: str, max_tokens: int = 512, overlap_tokens: int = 64) -> list[Chunk]:
    path, text = FIXTURES[language]
    return chunk_file(path, text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)


# ---------------------------------------------------------------------------------------------
# per-language fixtures


def test_every_required_language_has_a_fixture() -> None:
    assert len(FIXTURES) == 20  # the 19 benchmark languages, with TypeScript and TSX counted apart


@pytest.mark.parametrize("language", list(FIXTURES))
def test_definitions_at_the_default_budget(language: str) -> None:
    chunks = chunks_of(language)
    assert rows(chunks) == WHOLE[language]
    path = FIXTURES[language][0]
    assert all(c.path == path and c.language == language for c in chunks)
    assert all(c.content_type is ContentType.CODE for c in chunks)


@pytest.mark.parametrize("language", list(FIXTURES))
def test_small_budget_gives_members_their_own_chunks(language: str) -> None:
    assert rows(chunks_of(language, max_tokens=32, overlap_tokens=0)) == MEMBERS[language]


@pytest.mark.parametrize("language", list(SIGNATURES))
def test_signatures(language: str) -> None:
    chunks = chunks_of(language, max_tokens=32, overlap_tokens=0)
    found = {c.symbol: c.signature for c in reversed(chunks) if c.kind is not ChunkKind.ANCHOR}
    for symbol, signature in SIGNATURES[language].items():
        assert found[symbol] == signature


def test_python_chunks_in_detail() -> None:
    chunks = chunks_of("python", max_tokens=32, overlap_tokens=0)
    anchor, header, area, scaled, free = chunks
    assert anchor.content.startswith('"""Geometry helpers."""\nimport math')
    assert anchor.signature == "import math"
    # the decorator belongs to the class; the header stops before the first method
    assert header.content.splitlines()[0] == "@dataclass"
    assert header.content.splitlines()[-1] == "    radius: float = 1.0"
    assert "def area" not in header.content
    assert area.content.startswith("    def area(self) -> float:")
    assert (area.kind, scaled.kind, free.kind) == (ChunkKind.METHOD, ChunkKind.METHOD, ChunkKind.FUNCTION)
    assert free.embedding_text().startswith("geo/shapes.py › make_circle\ngeo shapes make circle\ndef make_circle")


def test_a_class_that_fits_is_one_chunk_with_its_methods() -> None:
    (cls,) = [c for c in chunks_of("java") if c.kind is ChunkKind.CLASS]
    assert "public double area()" in cls.content
    assert cls.content.startswith("/** A circle. */\n@Entity\npublic class Circle")
    assert cls.signature == "public class Circle extends Shape"  # annotations left out


def test_doc_comments_and_attributes_attach_to_their_definition() -> None:
    go = {c.symbol: c for c in chunks_of("go")}
    assert go["Area"].content.startswith("// Area returns the area.\nfunc (c *Circle) Area()")
    rust = {(c.kind, c.symbol): c for c in chunks_of("rust")}
    assert rust[ChunkKind.CLASS, "Point"].content.startswith("/// A point.\n#[derive(Debug)]\npub struct Point")


def test_typescript_class_fields_ambient_modules_and_class_values() -> None:
    text = """\
export class Store {
  handle = (e: Event): void => {
    console.log("handling event", e.type, e.target);
    this.dispatch(e);
    this.count += 1;
  };
}

declare module "left-pad" {
  export default function leftPad(s: string, n: number): string;
}

export const Widget = class {
  run() {
    return 1;
  }
};
"""
    chunks = chunk_file("store.ts", text, max_tokens=32, overlap_tokens=0)
    assert [(c.kind.name, c.symbol, c.scope) for c in chunks] == [
        ("CLASS", "Store", ("Store",)),
        ("METHOD", "handle", ("Store", "handle")),
        ("MODULE", "left-pad", ("left-pad",)),
        ("CLASS", "Widget", ("Widget",)),
    ]


def test_namespaces_are_scope_not_chunks() -> None:
    (cls,) = [c for c in chunks_of("csharp") if c.kind is ChunkKind.CLASS]
    assert cls.scope == ("Shapes", "Circle")
    assert cls.content.startswith("namespace Shapes\n{\n    /// <summary>")


# ---------------------------------------------------------------------------------------------
# oversized definitions


def big_function(lines: int = 120) -> str:
    body = "\n".join(f"    total += compute_value(item_{i}, factor={i})  # step {i}" for i in range(lines))
    return (
        "import os\n\n\n"
        "def accumulate(items: list[int],\n"
        "               factor: int = 2) -> int:\n"
        '    """Sum things."""\n'
        "    total = 0\n"
        f"{body}\n"
        "    return total\n"
    )


def test_oversized_definition_is_split_and_every_piece_keeps_the_signature() -> None:
    text = big_function()
    file_lines = text.splitlines()
    chunks = chunk_file("pkg/acc.py", text, max_tokens=128, overlap_tokens=16)
    pieces = [c for c in chunks if c.symbol == "accumulate"]
    assert len(pieces) > 3
    assert {c.kind for c in pieces} == {ChunkKind.FUNCTION}
    assert {c.signature for c in pieces} == {"def accumulate(items: list[int], factor: int = 2) -> int"}
    assert pieces[0].start_line == 4
    assert pieces[0].content.startswith("def accumulate(items: list[int],\n               factor: int = 2)")
    assert SPLIT_MARKER not in pieces[0].content
    for prev, piece in itertools.pairwise(pieces):
        assert piece.start_line <= prev.end_line + 1  # no hole between pieces
        assert piece.start_line > prev.start_line
    for piece in pieces[1:]:
        head, _, body = piece.content.partition(f"\n{SPLIT_MARKER}\n")
        assert head == "def accumulate(items: list[int],\n               factor: int = 2) -> int:"
        # after the marker, the content is exactly the piece's lines
        assert body == "\n".join(file_lines[piece.start_line - 1 : piece.end_line])
    assert pieces[-1].end_line == len(file_lines)


def test_pieces_overlap_by_about_overlap_tokens() -> None:
    chunks = chunk_file("acc.py", big_function(), max_tokens=128, overlap_tokens=32)
    pieces = [c for c in chunks if c.symbol == "accumulate"]
    assert all(b.start_line <= a.end_line for a, b in itertools.pairwise(pieces))
    no_overlap = chunk_file("acc.py", big_function(), max_tokens=128, overlap_tokens=0)
    pieces0 = [c for c in no_overlap if c.symbol == "accumulate"]
    assert all(b.start_line == a.end_line + 1 for a, b in itertools.pairwise(pieces0))


def test_big_class_becomes_header_plus_methods_without_duplicating_bodies() -> None:
    methods = "\n".join(
        f"    def method_{i}(self, value: int) -> int:\n"
        + "\n".join(f"        value = value * {j} + {i}  # arithmetic {j}" for j in range(8))
        + "\n        return value\n"
        for i in range(12)
    )
    text = f'class Engine:\n    """Does work."""\n\n    speed = 3\n\n{methods}'
    chunks = chunk_file("engine.py", text, max_tokens=256)
    header = chunks[0]
    assert (header.kind, header.symbol, header.start_line, header.end_line) == (
        ChunkKind.CLASS,
        "Engine",
        1,
        4,
    )
    members = chunks[1:]
    assert [c.symbol for c in members] == [f"method_{i}" for i in range(12)]
    assert all(c.scope == ("Engine", c.symbol) and c.kind is ChunkKind.METHOD for c in members)
    assert sum(c.content.count("def method_") for c in chunks) == 12


# ---------------------------------------------------------------------------------------------
# docs and config

MARKDOWN = """\
---
title: Demo
---
[![build](https://ci/badge.svg)](https://ci)

# Project

## Install

Run `pip install demo` to install the package.

```bash
# not a heading
pip install demo
```

## Usage
Call `demo.run()`.

Setext Heading
--------------

Body of the setext section.
"""


def test_markdown_sections_by_heading() -> None:
    chunks = chunk_file("docs/README.md", MARKDOWN)
    assert rows(chunks) == [
        (1, 4, "SECTION", "", ()),
        (6, 15, "SECTION", "Install", ("Project", "Install")),  # "# Project" alone folds into Install
        (17, 18, "SECTION", "Usage", ("Project", "Usage")),
        (20, 23, "SECTION", "Setext Heading", ("Project", "Setext Heading")),
    ]
    assert {c.content_type for c in chunks} == {ContentType.DOCS}
    assert chunks[1].signature == "## Install"
    assert chunks[1].language == "markdown"


def test_big_markdown_section_is_split_with_its_heading() -> None:
    text = "# Guide\n\n## Long\n\n" + "\n".join(f"Sentence number {i} of the section." for i in range(200))
    chunks = chunk_file("guide.md", text, max_tokens=64, overlap_tokens=0)
    assert len(chunks) > 5
    assert all(c.symbol == "Long" for c in chunks)
    assert all(c.content.startswith("## Long\n" + SPLIT_MARKER) for c in chunks[1:])


def test_rst_sections() -> None:
    text = "=====\nTitle\n=====\n\nIntro.\n\nSection A\n---------\n\nText A.\n\nSection B\n---------\n\nText B.\n"
    assert rows(chunk_file("index.rst", text)) == [
        (1, 5, "SECTION", "Title", ("Title",)),
        (7, 10, "SECTION", "Section A", ("Title", "Section A")),
        (12, 15, "SECTION", "Section B", ("Title", "Section B")),
    ]


YAML = """\
# CI settings
name: demo
version: 1
# the services
services:
  web:
    image: nginx
    ports:
      - "80:80"
  db:
    image: postgres
"""


def test_yaml_by_top_level_key() -> None:
    chunks = chunk_file("compose.yaml", YAML)
    assert rows(chunks) == [
        (1, 3, "CONFIG", "name, version", ()),
        (4, 11, "CONFIG", "services", ("services",)),
    ]
    assert {c.content_type for c in chunks} == {ContentType.CONFIG}


def test_big_yaml_value_is_chunked_by_its_own_keys() -> None:
    services = "\n".join(
        f"  svc{i}:\n    image: registry.example.com/team/service-{i}:latest\n    restart: always" for i in range(30)
    )
    chunks = chunk_file("compose.yml", f"version: 3\nservices:\n{services}\n", max_tokens=64)
    assert chunks[0].symbol == "version"
    nested = chunks[1:]
    assert all(c.scope[0] == "services" and c.kind is ChunkKind.CONFIG for c in nested)
    assert nested[0].start_line == 2  # the `services:` line joins its first member
    assert [c.symbol for c in nested] == [f"svc{i}" for i in range(30)]


def test_yaml_sequence_items_are_named_by_their_name_key() -> None:
    text = "- name: Install foo\n  apt: name=foo\n- name: Start foo\n  service: name=foo\n"
    assert [c.symbol for c in chunk_file("playbook.yml", text)] == ["Install foo", "Start foo"]


TOML = """\
# project file
name = "demo"
deps = [
  "a",
  "b",
]

[tool.ruff]
line-length = 100

# binaries
[[bin]]
name = "a"
"""


def test_toml_by_table() -> None:
    assert rows(chunk_file("pyproject.toml", TOML)) == [
        (1, 2, "CONFIG", "name", ("name",)),
        (3, 6, "CONFIG", "deps", ("deps",)),
        (8, 9, "CONFIG", "tool.ruff", ("tool", "ruff")),
        (11, 13, "CONFIG", "bin", ("bin",)),
    ]


def test_json_by_top_level_key() -> None:
    text = '{\n  "name": "x",\n  "version": "1.0",\n  "scripts": {\n    "build": "tsc"\n  }\n}\n'
    assert rows(chunk_file("package.json", text)) == [
        (2, 3, "CONFIG", "name, version", ()),
        (4, 6, "CONFIG", "scripts", ("scripts",)),
    ]


def test_ini_by_section() -> None:
    text = "; global\nroot = true\n\n[metadata]\nname = demo\n\n# options\n[options]\npackages = find:\n"
    assert rows(chunk_file("setup.cfg", text)) == [
        (1, 2, "CONFIG", "", ()),
        (4, 5, "CONFIG", "metadata", ("metadata",)),
        (7, 9, "CONFIG", "options", ("options",)),
    ]


# ---------------------------------------------------------------------------------------------
# fallback


def test_unknown_files_are_line_windows_labelled_text() -> None:
    text = "\n".join(f"line {i} of some log output with words" for i in range(300))
    chunks = chunk_file("notes/output.log", text, max_tokens=128, overlap_tokens=16)
    assert len(chunks) > 3
    assert {(c.kind, c.language, c.content_type) for c in chunks} == {(ChunkKind.WINDOW, "text", ContentType.TEXT)}
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 300
    assert all(b.start_line <= a.end_line for a, b in itertools.pairwise(chunks))


def test_code_without_definitions_is_windows() -> None:
    chunks = chunk_file("script.py", "import sys\n\nprint(sys.argv)\nx = 1\n")
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [(ChunkKind.WINDOW, 1, 4)]


def test_use_ast_false_gives_windows_for_code() -> None:
    chunks = chunk_file(*FIXTURES["go"], use_ast=False)
    assert {c.kind for c in chunks} == {ChunkKind.WINDOW}
    assert chunks[0].language == "go"


def test_languages_without_a_grammar_table_get_windows_with_their_label() -> None:
    (chunk,) = chunk_file("schema.sql", "CREATE TABLE t (id int);\n")
    assert (chunk.kind, chunk.language, chunk.content_type) == (ChunkKind.WINDOW, "sql", ContentType.CODE)


def test_shebang_decides_the_language_of_extensionless_scripts() -> None:
    text = "#!/usr/bin/env python3\nimport sys\n\n\ndef main() -> None:\n    print(sys.argv)\n"
    chunks = chunk_file("bin/tool", text)
    assert [c.kind for c in chunks] == [ChunkKind.ANCHOR, ChunkKind.FUNCTION]
    assert chunks[1].language == "python"


def test_explicit_language_wins_over_the_extension() -> None:
    chunks = chunk_file("weird.txt", "def f():\n    return 1\n", language="python")
    assert [(c.kind, c.symbol) for c in chunks] == [(ChunkKind.FUNCTION, "f")]


def test_chunker_version_is_a_string() -> None:
    assert isinstance(CHUNKER_VERSION, str) and CHUNKER_VERSION


# ---------------------------------------------------------------------------------------------
# robustness


def test_empty_and_blank_files_give_no_chunks() -> None:
    assert chunk_file("a.py", "") == []
    assert chunk_file("a.py", "\n\n   \n\t\n") == []
    assert chunk_file("a.md", "") == []


def test_only_comments() -> None:
    chunks = chunk_file("a.py", "# just a comment\n# and another\n")
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [(ChunkKind.WINDOW, 1, 2)]


def test_syntax_errors_still_give_definitions() -> None:
    text = "def good(a):\n    return a\n\n\ndef broken(:\n    pass ((\n\n\ndef also_good():\n    return 2\n"
    chunks = chunk_file("bad.py", text)
    assert "good" in {c.symbol for c in chunks}
    assert "also_good" in {c.symbol for c in chunks}
    assert_covers(text, chunks)


def test_crlf_and_missing_final_newline() -> None:
    text = "import os\r\n\r\n\r\ndef f():\r\n    return os.sep\r\n\r\n\r\ndef g():\r\n    return 1"
    chunks = chunk_file("crlf.py", text)
    assert rows(chunks) == [
        (1, 1, "ANCHOR", "crlf", ("crlf",)),
        (4, 5, "FUNCTION", "f", ("f",)),
        (8, 9, "FUNCTION", "g", ("g",)),
    ]
    assert all("\r" not in c.content for c in chunks)
    assert chunks[2].content == "def g():\n    return 1"


def test_very_long_lines_are_cut_in_content() -> None:
    long_line = "x = '" + "a" * 20_000 + "'"
    padding = "".join(f"\n\ndef g{i}(a):\n    return a + {i}\n" for i in range(80))
    text = f"def f():\n    {long_line}\n    return x\n{padding}"
    chunks = chunk_file("long.py", text)
    assert chunks[0].symbol == "f"
    assert len(chunks[0].content) < 500
    assert all(len(line) <= MAX_LINE_CHARS + 2 for c in chunks for line in c.content.splitlines())


def test_minified_code_is_windowed_not_parsed() -> None:
    text = ";".join(f"function f{i}(a){{return a+{i}}}" for i in range(3000))
    chunks = chunk_file("app.min.js", text)
    assert {c.kind for c in chunks} == {ChunkKind.WINDOW}
    assert all(c.start_line == 1 and c.end_line == 1 for c in chunks)


def test_deeply_nested_code_does_not_recurse() -> None:
    depth = 400
    text = "".join(" " * i + f"class C{i}:\n" for i in range(depth)) + " " * depth + "pass\n"
    chunks = chunk_file("deep.py", text, max_tokens=64)
    assert chunks[0].symbol == "C0"
    assert len(max((c.scope for c in chunks), key=len)) > 10
    assert_covers(text, chunks)
    js = "const x = {\n" + "a: {\n" * 3000 + "}\n" * 3000 + "};\nfunction f() {\n  return x;\n}\n"
    assert "f" in {c.symbol for c in chunk_file("deep.js", js)}
    brackets = "x = " + "[" * 5000 + "]" * 5000 + "\n\ndef f():\n    return x\n" + "# padding\n" * 100
    assert "f" in {c.symbol for c in chunk_file("brackets.py", brackets)}


def test_a_few_huge_lines_mean_minified_or_data_and_give_windows() -> None:
    text = "def f():\n    return '" + "a" * 50_000 + "'\n"
    assert {c.kind for c in chunk_file("blob.py", text)} == {ChunkKind.WINDOW}


def test_odd_bytes_do_not_break_anything() -> None:
    text = "def f():\n    return '\x00\udcff\u2028 é'\n\n\ndef g():\n    pass\n"
    chunks = chunk_file("odd.py", text)
    assert [c.symbol for c in chunks] == ["f", "g"]


def test_a_grammar_failure_falls_back_to_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    from lgrep_index import chunker

    def boom(*_args: object, **_kwargs: object) -> object:
        raise RuntimeError("grammar exploded")

    monkeypatch.setattr(chunker, "outline_code", boom)
    chunks = chunk_file(*FIXTURES["python"])
    assert {c.kind for c in chunks} == {ChunkKind.WINDOW}


# ---------------------------------------------------------------------------------------------
# property: spans are sane and every meaningful line is covered

_TRIVIAL = re.compile(r"^[\s(){}\[\];,.]*(?:(?:end|fi|done|esac)[\s(){}\[\];,.]*)?$")


def assert_covers(text: str, chunks: list[Chunk]) -> None:
    file_lines = text.replace("\r\n", "\n").split("\n")
    if file_lines and file_lines[-1] == "":
        file_lines.pop()
    covered: set[int] = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(file_lines), c
        assert c.content.strip()
        body = c.content
        if f"\n{SPLIT_MARKER}\n" in body:
            body = body.partition(f"\n{SPLIT_MARKER}\n")[2]
        expected = [
            line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " …"
            for line in file_lines[c.start_line - 1 : c.end_line]
        ]
        assert body == "\n".join(expected), c
        covered.update(range(c.start_line, c.end_line + 1))
    missing = [i + 1 for i, line in enumerate(file_lines) if not _TRIVIAL.match(line) and i + 1 not in covered]
    assert not missing, f"lines not in any chunk: {missing}"


ALL_TEXTS: dict[str, tuple[str, str]] = {
    **FIXTURES,
    "markdown": ("README.md", MARKDOWN),
    "yaml": ("compose.yaml", YAML),
    "toml": ("pyproject.toml", TOML),
    "big": ("acc.py", big_function()),
}


@pytest.mark.parametrize("name", list(ALL_TEXTS))
@pytest.mark.parametrize(("max_tokens", "overlap"), [(512, 64), (64, 16), (32, 0)])
def test_chunks_cover_every_meaningful_line(name: str, max_tokens: int, overlap: int) -> None:
    path, text = ALL_TEXTS[name]
    chunks = chunk_file(path, text, max_tokens=max_tokens, overlap_tokens=overlap)
    assert_covers(text, chunks)
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    for c in chunks:
        if c.symbol and c.kind is not ChunkKind.ANCHOR:
            assert c.kind is ChunkKind.CONFIG or c.scope[-1] == c.symbol


@pytest.mark.parametrize("name", list(FIXTURES))
def test_truncated_files_never_raise(name: str) -> None:
    path, text = FIXTURES[name]
    for cut in range(0, len(text), max(1, len(text) // 25)):
        assert_covers(text[:cut], chunk_file(path, text[:cut]))
