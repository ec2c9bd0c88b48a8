// Command storequery asks a Thanos Store API (a sidecar's gRPC port) for
// the series of a metric over the last minutes, with Thanos' own client
// (storepb), and prints the value of each series' label -label, one per
// line. It exits 1 when the store does not answer. e2e/node's Thanos test
// runs it against each sidecar through the takeover's rolls.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/thanos-io/thanos/pkg/store/storepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	addr := flag.String("addr", "", "the Store API's address, host:port")
	metric := flag.String("metric", "up", "the metric whose series are asked for")
	label := flag.String("label", "prometheus_replica", "the label whose value is printed for each series")
	window := flag.Duration("window", 5*time.Minute, "the time range asked for, up to now")
	timeout := flag.Duration("timeout", 3*time.Second, "how long the store has to answer")
	flag.Parse()
	if err := query(*addr, *metric, *label, *window, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "storequery:", err)
		os.Exit(1)
	}
}

func query(addr, metric, label string, window, timeout time.Duration) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	now := time.Now()
	stream, err := storepb.NewStoreClient(conn).Series(ctx, &storepb.SeriesRequest{
		MinTime:  now.Add(-window).UnixMilli(),
		MaxTime:  now.UnixMilli(),
		Matchers: []storepb.LabelMatcher{{Type: storepb.LabelMatcher_EQ, Name: "__name__", Value: metric}},
	})
	if err != nil {
		return fmt.Errorf("series of %s from %s: %w", metric, addr, err)
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("series of %s from %s: %w", metric, addr, err)
		}
		if s := resp.GetSeries(); s != nil {
			value := ""
			for _, l := range s.Labels {
				if l.Name == label {
					value = l.Value
				}
			}
			fmt.Println(value)
		}
	}
}
